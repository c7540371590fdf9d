/**
 * Cgroups of the server's own making, for a model's worker processes (memory_limit_mb, cpu_limit):
 * made under the server's own cgroup (/proc/self/cgroup), so a container's or a systemd unit's
 * limit still bounds them, in v2 (memory.max, cpu.max) or v1 (memory.limit_in_bytes,
 * cpu.cfs_quota_us) as the machine has it. The root is a parameter: tests lay out a fake tree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readOrNull } from '../../util/cgroup';

export interface CgroupLimits {
  memoryBytes: number | null;
  cpuCores: number | null;
}

/** The CFS period quotas are written against (the kernel's default). */
export const kCpuPeriodMicros = 100_000;

/** One made cgroup: its directories (one in v2; the memory and the cpu hierarchy's in v1). */
export class Cgroup {
  #oomKillsSeen = 0;

  constructor(
    readonly dirs: readonly string[],
    private readonly eventsFile: string,
  ) {}

  /** Moves the process (all its threads) in: what it allocates and runs from now on counts here. */
  join(pid: number): void {
    for (const dir of this.dirs) fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  }

  /**
   * A process of it was SIGKILLed: whether the kernel's OOM killer did it for this cgroup's limit.
   * The oom_kill counter (v2 memory.events, v1 memory.oom_control since Linux 4.13) rises once per
   * kill, so each exit takes one. memory.failcnt is no evidence: it counts the limit's hits, which
   * reclaim usually absorbs.
   */
  takeOomKill(): boolean {
    const m = /^oom_kill (\d+)$/m.exec(readOrNull(this.eventsFile) ?? '');
    if (!m || Number(m[1]) <= this.#oomKillsSeen) return false;
    this.#oomKillsSeen++;
    return true;
  }

  /** Removes it; it must hold no process (each has exited and been reaped). */
  remove(): void {
    for (const dir of this.dirs) fs.rmdirSync(dir);
  }
}

/** Where the server makes cgroups, and how: v2 or v1. */
export interface CgroupParent {
  readonly version: 1 | 2;
  /** Makes cgroup `name` with `limits` (throws when the kernel refuses). */
  make(name: string, limits: CgroupLimits): Cgroup;
}

/** `/proc/self/cgroup`'s lines (`id:controllers:path`): the path of the hierarchy holding `controller` ('' = v2). */
function ownPath(selfCgroup: string, controller: string): string | null {
  for (const line of selfCgroup.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (m && (controller === '' ? m[1] === '' : m[1].split(',').includes(controller))) return m[2];
  }
  return null;
}

function writeAll(dir: string, files: ReadonlyArray<[string, string | null]>): void {
  for (const [file, value] of files) if (value !== null) fs.writeFileSync(path.join(dir, file), value);
}

const quota = (cores: number) => String(Math.round(cores * kCpuPeriodMicros));

/** Makes `dirs`, sets each up, and removes what it made if any step fails. */
function makeDirs(setups: ReadonlyArray<[string, () => void]>): void {
  const made: string[] = [];
  try {
    for (const [dir, setUp] of setups) {
      fs.mkdirSync(dir);
      made.push(dir);
      setUp();
    }
  } catch (err) {
    for (const dir of made.reverse()) fs.rmdirSync(dir);
    throw err;
  }
}

function v2Parent(base: string): CgroupParent | { reason: string } {
  const available = (readOrNull(path.join(base, 'cgroup.controllers')) ?? '').split(/\s+/);
  const missing = ['memory', 'cpu'].filter((c) => !available.includes(c));
  if (missing.length)
    return { reason: `the server's cgroup v2 ${base} offers no ${missing.join(' or ')} controller to its children` };
  const enabled = (readOrNull(path.join(base, 'cgroup.subtree_control')) ?? '').split(/\s+/);
  const missingHere = ['memory', 'cpu'].filter((c) => !enabled.includes(c));
  try {
    if (missingHere.length)
      fs.writeFileSync(path.join(base, 'cgroup.subtree_control'), missingHere.map((c) => `+${c}`).join(' '));
  } catch (err) {
    // v2 gives controllers to the children only of a cgroup with no process of its own (but the root).
    return {
      reason: `cannot enable the memory and cpu controllers in ${base}/cgroup.subtree_control (${(err as Error).message}); run the server in a cgroup of its own with none of its processes in the parent`,
    };
  }
  return {
    version: 2,
    make(name, limits) {
      const dir = path.join(base, name);
      makeDirs([
        [
          dir,
          () =>
            writeAll(dir, [
              ['memory.max', limits.memoryBytes === null ? null : String(limits.memoryBytes)],
              // Swap would let a model past its limit keep going, slowly: the limit is of memory.
              [
                'memory.swap.max',
                limits.memoryBytes === null || !fs.existsSync(path.join(dir, 'memory.swap.max')) ? null : '0',
              ],
              ['cpu.max', limits.cpuCores === null ? null : `${quota(limits.cpuCores)} ${kCpuPeriodMicros}`],
            ]),
        ],
      ]);
      return new Cgroup([dir], path.join(dir, 'memory.events'));
    },
  };
}

function v1Parent(root: string, selfCgroup: string): CgroupParent | { reason: string } {
  const memoryPath = ownPath(selfCgroup, 'memory');
  const cpuPath = ownPath(selfCgroup, 'cpu');
  const cpuMount = ['cpu', 'cpu,cpuacct', 'cpuacct,cpu'].find((d) =>
    fs.existsSync(path.join(root, d, 'cpu.cfs_quota_us')),
  );
  if (memoryPath === null || cpuPath === null || cpuMount === undefined || !fs.existsSync(path.join(root, 'memory')))
    return { reason: `no cgroup v2 and no v1 memory and cpu hierarchies under ${root}` };
  const memoryBase = path.join(root, 'memory', memoryPath);
  const cpuBase = path.join(root, cpuMount, cpuPath);
  return {
    version: 1,
    make(name, limits) {
      const memoryDir = path.join(memoryBase, name);
      const cpuDir = path.join(cpuBase, name);
      const bytes = limits.memoryBytes === null ? null : String(limits.memoryBytes);
      makeDirs([
        [
          memoryDir,
          () =>
            writeAll(memoryDir, [
              ['memory.limit_in_bytes', bytes],
              // memory+swap at the same figure: no swapping past the limit (absent without swap accounting).
              [
                'memory.memsw.limit_in_bytes',
                fs.existsSync(path.join(memoryDir, 'memory.memsw.limit_in_bytes')) ? bytes : null,
              ],
            ]),
        ],
        [
          cpuDir,
          () =>
            writeAll(cpuDir, [
              ['cpu.cfs_period_us', limits.cpuCores === null ? null : String(kCpuPeriodMicros)],
              ['cpu.cfs_quota_us', limits.cpuCores === null ? null : quota(limits.cpuCores)],
            ]),
        ],
      ]);
      return new Cgroup([memoryDir, cpuDir], path.join(memoryDir, 'memory.oom_control'));
    },
  };
}

/**
 * Where this server can make cgroups under `root`, or why it cannot: v2 when the unified hierarchy
 * holds the controllers (root/cgroup.controllers), else v1's memory and cpu hierarchies. Proven by
 * making (and removing) one: a read-only tree or a non-root server fails here, not at a load.
 */
export function cgroupParent(
  root = '/sys/fs/cgroup',
  selfCgroup: string | null = readOrNull('/proc/self/cgroup'),
): CgroupParent | { reason: string } {
  if (selfCgroup === null) return { reason: 'no /proc/self/cgroup' };
  const v2Path = fs.existsSync(path.join(root, 'cgroup.controllers')) ? ownPath(selfCgroup, '') : null;
  const parent = v2Path !== null ? v2Parent(path.join(root, v2Path)) : v1Parent(root, selfCgroup);
  if ('reason' in parent) return parent;
  try {
    parent.make(`mme-probe-${process.pid}`, { memoryBytes: null, cpuCores: null }).remove();
  } catch (err) {
    return { reason: `cannot make a cgroup v${parent.version} here (${(err as Error).message.slice(0, 160)})` };
  }
  return parent;
}
