import assert from 'node:assert/strict';
import { envOverrideName, KEYS, renderKeysMarkdown, type KeySpec } from '../../src/config/keys';
import { readValue } from '../../src/config/values';

describe('config key table', () => {
  it('names every key once', () => {
    const names = KEYS.map((k) => k.name);
    assert.equal(new Set(names).size, names.length);
  });

  for (const spec of KEYS as readonly KeySpec[]) {
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
      const spec = (KEYS as readonly KeySpec[]).find((k) => k.name === name)!;
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

  it('renders one README row per key', () => {
    const lines = renderKeysMarkdown().split('\n');
    assert.equal(lines[0], '| key | default | meaning |');
    assert.equal(lines.length, KEYS.length + 2);
    assert.ok(
      lines.includes(`| \`job_queue_size\` | \`100\` | ${KEYS.find((k) => k.name === 'job_queue_size')!.doc} |`),
    );
    assert.ok(lines.some((l) => l.startsWith('| `model_store` | (unset) |')));
    assert.ok(
      lines.some((l) => l.includes('MMS_\\<KEY\\>')),
      'angle brackets are escaped',
    );
  });
});
