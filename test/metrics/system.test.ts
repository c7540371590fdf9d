import assert from 'node:assert/strict';
import os from 'node:os';
import { SystemSampler } from '../../src/metrics/system';

const GiB = 2 ** 30;

describe('metrics: instance metrics', () => {
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
