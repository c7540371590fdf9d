/** The cgroup readings (util/cgroup.ts) on files given as text: v2 and v1, with and without limits. */
import assert from 'node:assert/strict';
import { cgroupCpuLimit, cgroupCpuMicros, cgroupMemory } from '../../src/util/cgroup';

const GiB = 2 ** 30;
const files = (entries: Record<string, string>) => (path: string) => entries[path] ?? null;

describe('util: cgroup readings', () => {
  it('v2: memory.max with memory.current less inactive page cache', () => {
    const read = files({
      '/sys/fs/cgroup/memory.max': `${4 * GiB}\n`,
      '/sys/fs/cgroup/memory.current': `${GiB + 4096}\n`,
      '/sys/fs/cgroup/memory.stat': 'anon 100\nfile 8192\ninactive_file 4096\nactive_file 4096\n',
    });
    assert.deepEqual(cgroupMemory(read, 16 * GiB), { limitBytes: 4 * GiB, usedBytes: GiB });
  });

  it('v1: memory.limit_in_bytes with usage_in_bytes less total_inactive_file', () => {
    const read = files({
      '/sys/fs/cgroup/memory/memory.limit_in_bytes': `${2 * GiB}`,
      '/sys/fs/cgroup/memory/memory.usage_in_bytes': `${GiB}`,
      '/sys/fs/cgroup/memory/memory.stat': 'cache 10\ninactive_file 7\ntotal_inactive_file 1024\n',
    });
    assert.deepEqual(cgroupMemory(read, 16 * GiB), { limitBytes: 2 * GiB, usedBytes: GiB - 1024 });
  });

  it('no limit (v2 "max", v1 near 2^63, or not below the machine\'s memory) means the machine\'s figures', () => {
    assert.equal(
      cgroupMemory(files({ '/sys/fs/cgroup/memory.max': 'max\n', '/sys/fs/cgroup/memory.current': '5' }), 16 * GiB),
      null,
    );
    assert.equal(
      cgroupMemory(
        files({
          '/sys/fs/cgroup/memory/memory.limit_in_bytes': '9223372036854771712',
          '/sys/fs/cgroup/memory/memory.usage_in_bytes': '5',
        }),
        16 * GiB,
      ),
      null,
    );
    assert.equal(
      cgroupMemory(
        files({ '/sys/fs/cgroup/memory.max': `${32 * GiB}`, '/sys/fs/cgroup/memory.current': '5' }),
        16 * GiB,
      ),
      null,
    );
    assert.equal(cgroupMemory(files({}), 16 * GiB), null);
  });

  it('CPU time from v2 cpu.stat (µs) or v1 cpuacct.usage (ns)', () => {
    assert.equal(
      cgroupCpuMicros(files({ '/sys/fs/cgroup/cpu.stat': 'usage_usec 123456\nuser_usec 100000\n' })),
      123456,
    );
    assert.equal(cgroupCpuMicros(files({ '/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage': '5000000\n' })), 5000);
    assert.equal(cgroupCpuMicros(files({})), null);
  });
  it('CPU limit from v2 cpu.max or v1 cfs quota over period, rounded up; none without a quota', () => {
    assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '200000 100000\n' })), 2);
    assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' })), 2);
    assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' })), 1);
    assert.equal(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' })), null);
    assert.equal(
      cgroupCpuLimit(
        files({
          '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '400000\n',
          '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n',
        }),
      ),
      4,
    );
    assert.equal(
      cgroupCpuLimit(
        files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }),
      ),
      null,
    );
    assert.equal(cgroupCpuLimit(files({})), null);
  });
});
