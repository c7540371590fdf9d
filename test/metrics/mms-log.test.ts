import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMetrics } from '../../src/metrics';
import { configWith, request } from './helpers';

/**
 * MMS's line format (reference §5.2):
 * `<Name>.<Unit>:<value>|#<dimK>:<dimV>,...|#hostname:<host>[,requestID:<id>],timestamp:<epochSeconds>`.
 */
const kMmsLine =
  /^(?<name>[A-Za-z0-9_]+)\.(?<unit>[A-Za-z]+):(?<value>-?\d+(?:\.\d+)?)\|#(?<dims>[^:|,#]+:[^:|,#]+(?:,[^:|,#]+:[^:|,#]+)*)\|#hostname:(?<host>[^,|:#]+)(?:,requestID:[^,|]+)?,timestamp:(?<ts>\d+)$/;

describe('metrics: MMS metric log lines', () => {
  it("writes one line per metric per interval in MMS's format", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mme-mms-')), 'mms_metrics.log');
    const recorder = createMetrics(configWith(`metrics_mms_log=${file}`, 'metrics_per_model_dimension=true'), {
      log: () => undefined,
      now: () => 1_542_157_988_500,
    });
    for (let i = 0; i < 3; i++) request(recorder, 'a');
    request(recorder, 'odd|name,x:y', false);
    recorder.loadedModelCount(2);
    await recorder.close();

    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    const parsed = lines.map((line) => {
      const m = kMmsLine.exec(line);
      assert.ok(m, `not an MMS metric line: ${line}`);
      return m.groups!;
    });
    for (const p of parsed) {
      assert.equal(p.ts, '1542157988');
      assert.equal(p.host, os.hostname().replace(/[|,:#\s]/g, '_'));
    }
    const line = (name: string, dims: string) => parsed.find((p) => p.name === name && p.dims === dims);
    assert.deepEqual(
      { ...line('Invocations', 'Level:Host') },
      { name: 'Invocations', unit: 'Count', value: '4', dims: 'Level:Host', host: parsed[0].host, ts: '1542157988' },
    );
    assert.equal(line('ModelCacheHit', 'Level:Host')!.value, '0.75');
    assert.equal(line('ModelLatency', 'Level:Host')!.unit, 'Microseconds');
    assert.equal(line('Invocations', 'ModelName:a,Level:Model')!.value, '3');
    assert.equal(
      line('Invocations', 'ModelName:odd_name_x_y,Level:Model')!.value,
      '1',
      'separators in a model name are replaced',
    );
    assert.equal(line('LoadedModelCount', 'Level:Host')!.value, '2');
    assert.equal(line('MemoryUtilization', 'Level:Host')!.unit, 'Percent');
    assert.equal(line('MemoryUsed', 'Level:Host')!.unit, 'Megabytes');
  });
});
