import assert from 'node:assert/strict';
import { envOverrideName, KEYS, renderKeysMarkdown } from '../../src/config/keys';
import type { ServerConfig } from '../../src/config/types';
import { readValue } from '../../src/config/values';
import type { LogLevel } from '../../src/logger';

describe('config key table', () => {
  it('names every key once (and has keys: none would make the tests below zero tests)', () => {
    const names = KEYS.map((k) => k.name);
    assert.ok(names.length > 0);
    assert.equal(new Set(names).size, names.length);
  });

  for (const spec of KEYS) {
    it(`${spec.name}: default and error-message example are valid values`, () => {
      readValue(spec, { value: spec.default ?? '', from: null });
      readValue(spec, { value: spec.example ?? spec.default ?? '', from: null });
      assert.ok(
        spec.kind === 'string' || spec.kind === 'list' || spec.example !== undefined || spec.default !== null,
        'typed keys need an example for error messages',
      );
      assert.ok(spec.doc.length > 20 && !spec.doc.includes('\n'));
    });
  }

  it('bounds every duration key to what a timer can wait, naming the limit', () => {
    const durations: Array<[string, number]> = [
      ['default_response_timeout', 60_000],
      ['default_response_timeout_seconds', 1000],
      ['model_load_timeout', 1000],
      ['unregister_model_timeout', 1000],
      ['metric_time_interval', 1000],
      ['max_batch_delay', 1],
      ['load_wait_timeout', 1000],
      ['model_repository_timeout', 1000],
      ['eviction_drain_timeout', 1000],
      ['shutdown_timeout', 1000],
    ];
    for (const [name, unitMs] of durations) {
      const spec = KEYS.find((k) => k.name === name)!;
      const max = Math.floor((2 ** 31 - 1) / unitMs);
      readValue(spec, { value: String(max), from: null });
      assert.throws(
        () => readValue(spec, { value: String(max + 1), from: null }),
        /the longest a timer can wait/,
        name,
      );
    }
  });

  it('derives MMS_<KEY> override names as MMS does', () => {
    assert.equal(envOverrideName('job_queue_size'), 'MMS_JOB_QUEUE_SIZE');
  });

  it('renders one table per section, one row per key, with the values an enum allows', () => {
    const lines = renderKeysMarkdown().split('\n');
    const rows = lines.filter((l) => l.startsWith('| `'));
    assert.equal(rows.length, KEYS.length);
    assert.equal(
      lines.filter((l) => l === '| key | default | meaning |').length,
      lines.filter((l) => l.startsWith('## ')).length,
    );
    assert.ok(
      rows.includes(`| \`job_queue_size\` | \`100\` | ${KEYS.find((k) => k.name === 'job_queue_size')!.doc} |`),
    );
    assert.ok(rows.some((l) => l.startsWith('| `model_store` | `/opt/ml/models` |')));
    assert.ok(
      rows.some((l) => l.startsWith('| `worker_mode` | `dedicated` |') && l.endsWith(' One of: dedicated, shared. |')),
    );
    assert.ok(
      lines.some((l) => l.includes('MMS_\\<KEY\\>')),
      'angle brackets are escaped',
    );
  });
});

// Compile-time: the config's plain fields take their names and types from the key tables.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const kTypesFollowTheTable: [
  Equal<ServerConfig['workerMode'], 'dedicated' | 'shared'>,
  Equal<ServerConfig['grpcInferencePort'], number | null>,
  Equal<ServerConfig['logLevel'], LogLevel>,
  Equal<ServerConfig['metricsCloudwatchEndpoint'], string | null>,
  Equal<ServerConfig['modelMemoryBudgetBytes'], number>,
  Equal<ServerConfig['grpcInferenceAddress'], string>,
] = [true, true, true, true, true, true];
void kTypesFollowTheTable;
