import assert from 'node:assert/strict';
import os from 'node:os';
import { cgroupCpuMicros, cgroupMemory } from '../../src/metrics/cgroup';
import { SystemSampler } from '../../src/metrics/system';

const GiB = 2 ** 30;
const files = (entries: Record<string, string>) => (path: string) => entries[path] ?? null;

describe('metrics: instance metrics', () => {
  describe('cgroup readings', () => {
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
  });

  it("reports the container's CPU (summed over cores), memory against its limit and the disk", async () => {
    let usage = 1_000_000;
    let clock = 0;
    const sampler = new SystemSampler({
      diskPath: os.tmpdir(),
      machineBytes: 64 * GiB,
      clockMs: () => clock,
      read: (path) =>
        (
          ({
            '/sys/fs/cgroup/memory.max': `${4 * GiB}`,
            '/sys/fs/cgroup/memory.current': `${GiB}`,
            '/sys/fs/cgroup/memory.stat': 'inactive_file 0\n',
            '/sys/fs/cgroup/cpu.stat': `usage_usec ${usage}\n`,
          }) as Record<string, string>
        )[path] ?? null,
    });
    const first = await sampler.sample();
    assert.ok(!first.some((s) => s.def.name === 'CPUUtilization'), 'the first reading only starts the CPU measurement');
    usage += 2_000_000; // two cores busy ...
    clock += 1000; // ... for one second
    const values = Object.fromEntries((await sampler.sample()).map((s) => [s.def.name, s.sum]));
    assert.equal(values.CPUUtilization, 200);
    assert.equal(values.MemoryUtilization, 25);
    assert.equal(values.MemoryUsed, 1024);
    assert.equal(values.MemoryAvailable, 3072);
    assert.ok(values.DiskUtilization > 0 && values.DiskUtilization <= 100);
  });

  it("falls back to the machine's figures outside a cgroup and leaves out what it cannot read", async () => {
    const sampler = new SystemSampler({ diskPath: '/nonexistent/model-store', read: () => null });
    const values = Object.fromEntries((await sampler.sample()).map((s) => [s.def.name, s.sum]));
    assert.ok(values.CPUUtilization >= 0 && values.CPUUtilization <= 100 * os.cpus().length);
    assert.ok(
      Math.abs(values.MemoryUsed + values.MemoryAvailable - os.totalmem() / 2 ** 20) < 1,
      'used + available = total',
    );
    assert.equal(values.DiskUtilization, undefined);
  });
});
