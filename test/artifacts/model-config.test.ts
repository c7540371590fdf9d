import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { asyncReads, syncReads } from '../../src/artifacts/dir-reads';
import { parseModelConfig, readModelConfig } from '../../src/artifacts/model-config';
import { resolveArtifact } from '../../src/artifacts/model-artifact';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { assertMmeError, useTempDir } from './helpers';

describe('model-config.json', () => {
  const tmp = useTempDir('artifact-config-');
  const parse = (value: unknown) => parseModelConfig(JSON.stringify(value), 'model-config.json in /m');
  const parseFails = (text: string, message: RegExp) =>
    assertMmeError(
      Promise.resolve().then(() => parseModelConfig(text, 'model-config.json in /m')),
      'MME_ERR_INVALID_MODEL',
      message,
    );

  it('accepts every field', () => {
    const full = {
      batchSize: 8,
      maxBatchDelay: 0,
      minWorkers: 0,
      maxWorkers: 4,
      jobQueueSize: 100,
      responseTimeout: 60,
      loadTimeout: 120,
      useJobTicket: true,
      deviceIds: [0, 1],
      handler: 'handler.js',
      memoryLimitMb: 150,
      cpuLimit: 0.5,
    };
    const config = parse(full);
    assert.deepEqual(config, full);
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.deviceIds));
  });

  it('accepts an empty object', () => assert.deepEqual(parse({}), {}));

  it('accepts durations up to the longest a timer can wait', () =>
    assert.deepEqual(parse({ loadTimeout: 2_147_483, responseTimeout: 2_147_483, maxBatchDelay: 2 ** 31 - 1 }), {
      loadTimeout: 2_147_483,
      responseTimeout: 2_147_483,
      maxBatchDelay: 2 ** 31 - 1,
    }));

  const wrong: Array<[string, unknown, RegExp]> = [
    ['batchSize', '8', /an integer >= 1, got "8"/],
    ['batchSize', 0, /an integer >= 1, got 0/],
    ['batchSize', 1.5, /an integer >= 1/],
    ['maxBatchDelay', -1, /an integer >= 0/],
    ['minWorkers', null, /an integer >= 0, got null/],
    ['maxWorkers', 0, /an integer >= 1/],
    ['jobQueueSize', 1e20, /an integer >= 1/],
    ['responseTimeout', '60', /an integer >= 1/],
    ['loadTimeout', [], /an integer >= 1/],
    ['useJobTicket', 'true', /true or false/],
    ['deviceIds', 0, /an array of integers >= 0/],
    ['deviceIds', [0, -1], /an array of integers >= 0/],
    ['deviceIds', ['0'], /an array of integers >= 0/],
    ['handler', 7, /a relative path inside the model directory/],
    ['handler', '', /a relative path inside the model directory/],
    [
      'loadTimeout',
      2_147_484,
      /an integer >= 1 and <= 2147483 seconds \(about 24\.8 days, the longest a timer can wait\), got 2147484/,
    ],
    ['responseTimeout', 2_200_000, /an integer >= 1 and <= 2147483 seconds/],
    ['maxBatchDelay', 2 ** 31, /an integer >= 0 and <= 2147483647 ms/],
    // Below a warm worker's own footprint, every worker would be stopped before its model loaded.
    ['memoryLimitMb', 63, /an integer >= 64, got 63/],
    ['memoryLimitMb', 150.5, /an integer >= 64/],
    ['cpuLimit', 0, /a number of cores >= 0\.01 and <= \d+ \(this machine's cores\), got 0/],
    ['cpuLimit', 4096, /a number of cores >= 0\.01 and <= \d+/],
    ['cpuLimit', '0.5', /a number of cores/],
    ['pinned', 'yes', /true or false, got "yes"/],
    ['evictionPriority', 'urgent', /"low", "normal" or "high", got "urgent"/],
    ['idleUnloadSeconds', -1, /an integer >= 0 and <= 2147483 seconds/],
    ['idleUnloadSeconds', 1.5, /an integer >= 0/],
  ];
  for (const [field, value, message] of wrong) {
    it(`refuses ${field}: ${JSON.stringify(value)}, naming the field and file`, () =>
      parseFails(
        JSON.stringify({ [field]: value }),
        new RegExp(`^model-config\\.json in /m: "${field}" must be ${message.source}`),
      ));
  }

  it('refuses unknown fields, so typos are not silently ignored', () =>
    parseFails(
      '{"batch_size": 4}',
      /model-config\.json in \/m: unknown field "batch_size" \(known fields: batchSize, /,
    ));

  it('refuses a __proto__ key', () => parseFails('{"__proto__": {"batchSize": 4}}', /unknown field "__proto__"/));

  it('refuses minWorkers above maxWorkers', () =>
    parseFails('{"minWorkers": 3, "maxWorkers": 2}', /"minWorkers" \(3\) must not exceed "maxWorkers" \(2\)/));

  for (const [text, message] of [
    ['{', /model-config\.json in \/m is not valid JSON/],
    ['', /is not valid JSON/],
    ['[]', /must hold a JSON object/],
    ['null', /must hold a JSON object/],
    ['"x"', /must hold a JSON object/],
  ] as const) {
    it(`refuses ${JSON.stringify(text)}`, () => parseFails(text, message));
  }

  it('truncates long values in messages', () =>
    parseFails(JSON.stringify({ batchSize: 'x'.repeat(500) }), /got "x{70,}\.\.\.$/));

  for (const [kind, reads] of [
    ['asynchronous', asyncReads],
    ['synchronous', syncReads],
  ] as const)
    describe(`readModelConfig (${kind} reads)`, () => {
      it('returns {} when the file is absent', async () => {
        assert.deepEqual(await readModelConfig(tmp(), 'model-config.json', reads), {});
      });

      it('refuses a file over 64 KiB', () => {
        writeFileSync(path.join(tmp(), 'model-config.json'), `{"batchSize": 1${' '.repeat(70_000)}}`);
        return assertMmeError(
          readModelConfig(tmp(), 'model-config.json', reads),
          'MME_ERR_INVALID_MODEL',
          /larger than 64 KiB/,
        );
      });

      it('refuses a symbolic link named model-config.json', () => {
        writeFileSync(path.join(tmp(), 'real.json'), '{}');
        symlinkSync(path.join(tmp(), 'real.json'), path.join(tmp(), 'model-config.json'));
        return assertMmeError(
          readModelConfig(tmp(), 'model-config.json', reads),
          'MME_ERR_INVALID_MODEL',
          /symbolic link/,
        );
      });

      it('reads a valid file', async () => {
        writeFileSync(path.join(tmp(), 'model-config.json'), '{"batchSize": 4}');
        assert.deepEqual(await readModelConfig(tmp(), 'model-config.json', reads), { batchSize: 4 });
      });

      it('refuses a directory named model-config.json', () => {
        mkdirSync(path.join(tmp(), 'model-config.json'));
        return assertMmeError(
          readModelConfig(tmp(), 'model-config.json', reads),
          'MME_ERR_INVALID_MODEL',
          /not a regular file/,
        );
      });
    });

  it('reaches resolveArtifact, which names the file by the url', async () => {
    const dir = writeModelDir(tmp(), 'm', addModel(), { 'model-config.json': '{"batchSize": true}' });
    await assertMmeError(
      resolveArtifact(dir, { cacheDir: path.join(tmp(), 'cache') }),
      'MME_ERR_INVALID_MODEL',
      new RegExp(`^model-config\\.json in "${dir}": "batchSize" must be an integer >= 1, got true$`),
    );
  });
});
