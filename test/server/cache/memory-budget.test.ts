import assert from 'node:assert/strict';
import { MemoryEstimator, memoryBudgetBytes, memoryLimitBytes } from '../../../src/server/cache/memory-budget';
import { mb } from '../../../src/util/mb';

const files = (map: Record<string, string>) => (p: string) => map[p] ?? null;
const GiB = 2 ** 30;

describe('memory budget', () => {
  it('reads the cgroup v2 limit, ignoring "max"', () => {
    assert.equal(memoryLimitBytes(files({ '/sys/fs/cgroup/memory.max': '2147483648\n' }), 24 * GiB), 2 * GiB);
    assert.equal(memoryLimitBytes(files({ '/sys/fs/cgroup/memory.max': 'max\n' }), 24 * GiB), 24 * GiB);
  });

  it('reads the cgroup v1 limit, treating the near-2^63 value as no limit', () => {
    assert.equal(
      memoryLimitBytes(files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': '4294967296' }), 24 * GiB),
      4 * GiB,
    );
    assert.equal(
      memoryLimitBytes(files({ '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712' }), 24 * GiB),
      24 * GiB,
    );
  });

  it('never exceeds the machine memory and falls back to it without cgroups', () => {
    assert.equal(memoryLimitBytes(files({ '/sys/fs/cgroup/memory.max': String(64 * GiB) }), 24 * GiB), 24 * GiB);
    assert.equal(memoryLimitBytes(files({}), 8 * GiB), 8 * GiB);
  });

  it('uses an explicit budget, else the limit minus the reserve', () => {
    assert.equal(memoryBudgetBytes(3 * GiB, GiB, 24 * GiB), 3 * GiB);
    assert.equal(memoryBudgetBytes(0, GiB, 24 * GiB), 23 * GiB);
    assert.equal(memoryBudgetBytes(0, 2 * GiB, GiB), 0);
  });

  it('writes sizes as MB, with a decimal for the fractions a model in a shared host costs', () => {
    assert.deepEqual(
      [mb(0), mb(128 * 1024), mb(2 ** 20), mb(7.26 * 2 ** 20), mb(300.4 * 2 ** 20)],
      ['0 MB', '0.1 MB', '1 MB', '7.3 MB', '300 MB'],
    );
  });

  it('learns the per-copy base of each worker mode from small models and the size factor from large ones', () => {
    const e = new MemoryEstimator();
    e.learn(1000, 2, 'dedicated', 2 * 30 * 2 ** 20);
    assert.equal(e.base.dedicated, 30 * 2 ** 20);
    e.learn(1000, 1, 'shared', 2 ** 19);
    assert.equal(e.base.shared, 2 ** 19, 'a session in a shared host costs no process');
    assert.equal(e.base.dedicated, 30 * 2 ** 20);
    e.learn(100 * 2 ** 20, 1, 'dedicated', 30 * 2 ** 20 + 300 * 2 ** 20);
    assert.equal(e.factor, 3);
    assert.equal(e.estimate(10 * 2 ** 20, 2, 'dedicated'), 2 * (30 * 2 ** 20 + 3 * 10 * 2 ** 20));
    assert.equal(e.estimate(10 * 2 ** 20, 1, 'shared'), 2 ** 19 + 3 * 10 * 2 ** 20);
  });
});
