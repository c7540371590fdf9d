/**
 * memory_limit_mb and cpu_limit on real worker processes, in the cgroups the server makes (root and a
 * writable cgroup tree: the `cgroup` tier of test/helpers/skip.ts). What is asserted is the kernel's
 * setting and the kernel's kill, never a measured time or memory figure.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../../harness/fault-handlers';
import { invoke, loadModel, request } from '../../../harness/http-requests';
import { addModel, writeModelDir } from '../../../harness/onnx-models';
import { startTestServer, type TestServer } from '../../../harness/test-server';
import { cgroupParent } from '../../../src/server/processes/limit-enforcement';
import { skipBecause } from '../../helpers/skip';

/** The directory of `pid`'s cgroup that holds `controller` (v1), or its one cgroup (v2). */
function cgroupDirOf(pid: number, controller: 'memory' | 'cpu'): string {
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  for (const line of lines) {
    const [, controllers, at] = /^\d+:([^:]*):(.*)$/.exec(line)!;
    if (controllers.split(',').includes(controller)) {
      const mount = fs.readdirSync('/sys/fs/cgroup').find((d) => d.split(',').includes(controller))!;
      return path.join('/sys/fs/cgroup', mount, at);
    }
  }
  return path.join('/sys/fs/cgroup', lines.find((l) => l.startsWith('0::'))!.slice(3));
}

describe('limit enforcement: a limited model in a cgroup of its own (real processes, cgroup tier)', function () {
  let t: TestServer;
  before(function () {
    const parent = cgroupParent();
    if ('reason' in parent) skipBecause(this, 'cgroup', parent.reason);
  });
  afterEach(async () => {
    await t?.close();
  });

  async function loadBehaviour(name: string, extra: Record<string, unknown> = {}): Promise<void> {
    const dir = writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler });
    const res = await loadModel(t, name, dir, extra);
    assert.equal(res.status, 200, res.text);
  }

  const describeModel = async (name: string) => (await request(`${t.managementUrl}/models/${name}`)).body;

  it('a handler allocating 400 MB under memory_limit_mb=150 is stopped with a 507 naming the limit, alone: its neighbour answers 200, and it answers again after its restart', async () => {
    t = await startTestServer();
    await loadBehaviour('limited', { memory_limit_mb: 150 });
    await loadBehaviour('neighbour');
    const before = await describeModel('limited');
    const pid = before.workers[0].pid as number;
    assert.equal(
      fs
        .readFileSync(
          `${cgroupDirOf(pid, 'memory')}/memory.${before.limits.enforcedBy === 'cgroup v1' ? 'limit_in_bytes' : 'max'}`,
          'utf8',
        )
        .trim(),
      String(150 * 2 ** 20),
    );
    assert.deepEqual(before.limits, {
      memoryLimitMb: 150,
      cpuLimit: null,
      enforcedBy: before.limits.enforcedBy,
      ownProcesses: true,
    });
    // The budget counts the limit, not what the worker measures.
    assert.equal(before.memoryUsage, 150 * 2 ** 20);
    const [killed, neighbour] = await Promise.all([invoke(t, 'limited', { allocMb: 400 }), invoke(t, 'neighbour', {})]);
    assert.equal(killed.status, 507, killed.text);
    assert.match(killed.body.message, /went past its memory_limit_mb/);
    assert.equal(neighbour.status, 200, neighbour.text);
    assert.equal((await invoke(t, 'neighbour', {})).status, 200);
    const again = await invoke(t, 'limited', { allocMb: 20 });
    assert.equal(again.status, 200, again.text);
    assert.notEqual(again.body.pid, pid);
    assert.ok(
      t.logs.some((l) => /restarting \(exit reason: memory-limit\)/.test(l)),
      'the restart says why',
    );
  });

  it('cpu_limit=0.5 under worker_mode=shared: processes of its own, the CFS quota in their cgroup, autoscale within it, the cgroup gone with the last worker', async () => {
    t = await startTestServer('worker_mode=shared');
    await loadBehaviour('cpu', { cpu_limit: 0.5, initial_workers: 2 });
    const d = await describeModel('cpu');
    assert.equal(d.workerMode, 'dedicated');
    assert.deepEqual(
      d.workers.map((w: { host: string | null }) => w.host),
      [null, null],
    );
    const dirs = d.workers.map((w: { pid: number }) => cgroupDirOf(w.pid, 'cpu'));
    assert.equal(dirs[0], dirs[1], "both workers in the model's one cgroup");
    const quota = fs.existsSync(`${dirs[0]}/cpu.max`)
      ? fs.readFileSync(`${dirs[0]}/cpu.max`, 'utf8').trim()
      : `${fs.readFileSync(`${dirs[0]}/cpu.cfs_quota_us`, 'utf8').trim()} ${fs.readFileSync(`${dirs[0]}/cpu.cfs_period_us`, 'utf8').trim()}`;
    assert.equal(quota, '50000 100000');
    assert.equal(t.server.manager.registry.get('cpu').load.max, 1, 'autoscale plans within ceil(cpu_limit) workers');
    assert.equal((await invoke(t, 'cpu', { spinMs: 5 })).status, 200);
    assert.equal((await request(`${t.managementUrl}/models/cpu`, { method: 'DELETE' })).status, 200);
    assert.equal(fs.existsSync(dirs[0]), false, 'the cgroup is removed with the last worker');
  });
});
