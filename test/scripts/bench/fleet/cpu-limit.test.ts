import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { cpuLimit } from '../../../../scripts/bench/fleet/cpu-limit';
import { skipBecause } from '../../../helpers/skip';

describe('scripts/bench/fleet/cpu-limit: a fleet instance in a cgroup with a CPU quota of its own', function () {
  it('runs the command it launches inside the cgroup, whose quota is the CPUs asked for, and removes the cgroup', function () {
    const name = `mme-test-cpu-limit-${process.pid}`;
    const limit = cpuLimit(name, 0.25);
    if ('reason' in limit) skipBecause(this, 'cgroup', limit.reason);
    try {
      const procs = limit.launcher.at(-1)!;
      const dir = procs.slice(0, -'/cgroup.procs'.length);
      const quota = fs.existsSync(`${dir}/cpu.max`)
        ? fs.readFileSync(`${dir}/cpu.max`, 'utf8').trim()
        : `${fs.readFileSync(`${dir}/cpu.cfs_quota_us`, 'utf8').trim()} ${fs.readFileSync(`${dir}/cpu.cfs_period_us`, 'utf8').trim()}`;
      assert.equal(quota, '25000 100000');
      const [cmd, ...args] = [...limit.launcher, 'cat', '/proc/self/cgroup'];
      const run = spawnSync(cmd, args, { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      // Under this process's own cgroup: v2 "0::/OWN/NAME"; v1 "N:cpu,cpuacct:/OWN/NAME" or "N:cpu:/OWN/NAME".
      assert.match(run.stdout, new RegExp(`^\\d+:(cpu[^:]*)?:/(.*/)?${name}$`, 'm'));
    } finally {
      limit.remove();
    }
    assert.equal(fs.existsSync(limit.launcher.at(-1)!), false, 'the cgroup is removed once empty');
  });
});
