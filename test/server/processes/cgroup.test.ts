import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../../../harness/test-server';
import { cgroupParent, type CgroupParent } from '../../../src/server/processes/limit-enforcement';

/** A fake cgroup tree: `files` (path → text) under a new root; a path ending in / is a directory. */
function fakeTree(files: Record<string, string>): string {
  const root = tempDir('mme-cgroup-');
  for (const [rel, text] of Object.entries(files)) {
    const at = path.join(root, rel);
    if (rel.endsWith('/')) fs.mkdirSync(at, { recursive: true });
    else {
      fs.mkdirSync(path.dirname(at), { recursive: true });
      fs.writeFileSync(at, text);
    }
  }
  return root;
}

const read = (file: string) => fs.readFileSync(file, 'utf8');

/** The kernel drops a cgroup's control files with its directory; the fake's are plain files, unlinked first. */
function dropControlFiles(dir: string): void {
  for (const f of fs.readdirSync(dir)) fs.unlinkSync(path.join(dir, f));
}

function parentOf(p: CgroupParent | { reason: string }): CgroupParent {
  if ('reason' in p) assert.fail(`no parent: ${p.reason}`);
  return p;
}

const kLimits = { memoryLimitMb: 150, cpuLimit: 0.5 };

describe('cgroup: the cgroups the server makes for limited models', () => {
  it('v1: under its own memory and cpu cgroups, memory.limit_in_bytes and the CFS quota; joins write the pid to both; oom_control counts the kills', () => {
    const root = fakeTree({ 'memory/srv/mme/': '', 'cpu,cpuacct/cpu.cfs_quota_us': '-1' });
    const parent = parentOf(cgroupParent(root, '5:memory:/srv/mme\n3:cpu,cpuacct:/\n0::/\n'));
    assert.equal(parent.version, 1);
    const cg = parent.make('m', kLimits);
    const [memory, cpu] = cg.dirs;
    assert.deepEqual(cg.dirs, [path.join(root, 'memory/srv/mme/m'), path.join(root, 'cpu,cpuacct/m')]);
    assert.equal(read(`${memory}/memory.limit_in_bytes`), String(150 * 2 ** 20));
    assert.equal(read(`${cpu}/cpu.cfs_quota_us`), '50000');
    assert.equal(read(`${cpu}/cpu.cfs_period_us`), '100000');
    cg.join(4242);
    assert.equal(read(`${memory}/cgroup.procs`), '4242');
    assert.equal(read(`${cpu}/cgroup.procs`), '4242');
    assert.equal(cg.takeOomKill(), false, 'no counter: no evidence');
    fs.writeFileSync(`${memory}/memory.oom_control`, 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n');
    assert.deepEqual([cg.takeOomKill(), cg.takeOomKill(), cg.takeOomKill()], [true, true, false], 'one per kill');
    for (const dir of cg.dirs) dropControlFiles(dir);
    cg.remove();
    assert.equal(fs.existsSync(memory) || fs.existsSync(cpu), false);
  });

  it('v2: under its own cgroup, with memory and cpu given to its children; memory.max, cpu.max, memory.events', () => {
    const root = fakeTree({
      'cgroup.controllers': 'cpuset cpu io memory pids',
      'srv.slice/mme/cgroup.controllers': 'cpu memory pids',
      'srv.slice/mme/cgroup.subtree_control': 'pids',
    });
    const parent = parentOf(cgroupParent(root, '0::/srv.slice/mme\n'));
    assert.equal(parent.version, 2);
    assert.equal(read(path.join(root, 'srv.slice/mme/cgroup.subtree_control')), '+memory +cpu');
    const cg = parent.make('m', kLimits);
    const [dir] = cg.dirs;
    assert.equal(dir, path.join(root, 'srv.slice/mme/m'));
    assert.equal(read(`${dir}/memory.max`), String(150 * 2 ** 20));
    assert.equal(read(`${dir}/cpu.max`), '50000 100000');
    cg.join(7);
    assert.equal(read(`${dir}/cgroup.procs`), '7');
    fs.writeFileSync(`${dir}/memory.events`, 'low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n');
    assert.deepEqual([cg.takeOomKill(), cg.takeOomKill()], [true, false]);
  });

  it('a limit not asked for is not written: cpu_limit alone leaves memory unbounded', () => {
    const root = fakeTree({ 'cgroup.controllers': 'cpu memory', 'cgroup.subtree_control': 'cpu memory' });
    const cg = parentOf(cgroupParent(root, '0::/\n')).make('m', { memoryLimitMb: null, cpuLimit: 1.25 });
    assert.deepEqual(fs.readdirSync(cg.dirs[0]), ['cpu.max']);
    assert.equal(read(`${cg.dirs[0]}/cpu.max`), '125000 100000');
  });

  it('says why there are no cgroups: no controllers, controllers that cannot be given to children, a tree it cannot write', () => {
    assert.match(
      (cgroupParent(fakeTree({ 'cgroup.controllers': 'pids' }), '0::/\n') as { reason: string }).reason,
      /offers no memory or cpu controller/,
    );
    // v2 gives controllers only from a cgroup with no process of its own: the kernel answers EBUSY.
    const busy = fakeTree({ 'cgroup.controllers': 'cpu memory', 'cgroup.subtree_control/': '' });
    assert.match(
      (cgroupParent(busy, '0::/\n') as { reason: string }).reason,
      /cannot enable the memory and cpu controllers/,
    );
    assert.match((cgroupParent(fakeTree({}), '0::/\n') as { reason: string }).reason, /no cgroup v2 and no v1/);
    const unwritable = fakeTree({ memory: 'a file where a directory should be', 'cpu/cpu.cfs_quota_us': '-1' });
    assert.match(
      (cgroupParent(unwritable, '4:memory:/\n1:cpu:/\n') as { reason: string }).reason,
      /cannot make a cgroup v1 here/,
    );
    assert.deepEqual(cgroupParent(unwritable, null), { reason: 'no /proc/self/cgroup' });
  });

  it('a cgroup half made is taken down: v1 memory made, cpu refused', () => {
    const root = fakeTree({ 'memory/': '', 'cpu/cpu.cfs_quota_us': '-1', 'cpu/gone/': '' });
    const parent = parentOf(cgroupParent(root, '4:memory:/\n1:cpu:/gone\n'));
    fs.rmdirSync(path.join(root, 'cpu/gone'));
    assert.throws(() => parent.make('m', { memoryLimitMb: null, cpuLimit: 0.5 }), /ENOENT/);
    assert.equal(fs.existsSync(path.join(root, 'memory/m')), false);
  });
});
