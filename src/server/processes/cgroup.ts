/**
 * Cgroups of the server's own making, for a model's worker processes (memory_limit_mb, cpu_limit):
 * made under the server's own cgroup (/proc/self/cgroup), so a container's or a systemd unit's
 * limit still bounds them, in v2 or v1 as the machine has it. The root is a parameter: tests lay
 * out a fake tree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readOrNull } from '../../util/cgroup';
import { limitBytes, type ModelLimits } from './process-limits';

/** The CFS period quotas are written against (the kernel's default). */
const kCpuPeriodMicros = 100_000;

/** One made cgroup: its directories (one in v2; the memory and the cpu hierarchy's in v1). */
export class Cgroup {
  #oomKillsSeen = 0;

  constructor(
    readonly dirs: readonly string[],
    private readonly eventsFile: string,
  ) {}

  /** Moves the process (all its threads) in. */
  join(pid: number): void {
    for (const dir of this.dirs) fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  }

  /**
   * A process of it was SIGKILLed: whether the OOM killer did it for this cgroup's limit. The
   * oom_kill counter (v2 memory.events, v1 memory.oom_control since Linux 4.13) rises once per kill,
   * so each exit takes one. memory.failcnt is no evidence: reclaim usually absorbs the limit's hits.
   */
  takeOomKill(): boolean {
    const m = /^oom_kill (\d+)$/m.exec(readOrNull(this.eventsFile) ?? '');
    if (!m || Number(m[1]) <= this.#oomKillsSeen) return false;
    this.#oomKillsSeen++;
    return true;
  }

  /** It must hold no process (each has exited and been reaped). */
  remove(): void {
    for (const dir of this.dirs) fs.rmdirSync(dir);
  }
}

export interface CgroupParent {
  readonly version: 1 | 2;
  /** Throws when the kernel refuses. */
  make(name: string, limits: ModelLimits): Cgroup;
}

/** `/proc/self/cgroup`'s lines (`id:controllers:path`): the path of the hierarchy holding `controller` ('' = v2). */
function ownPath(selfCgroup: string, controller: string): string | null {
  for (const line of selfCgroup.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (m && (controller === '' ? m[1] === '' : m[1].split(',').includes(controller))) return m[2];
  }
  return null;
}

/**
 * Makes each directory and writes its files (a null value is left as the kernel made it; a name
 * ending in `?` is written only where the kernel made the file); removes what it made if a step fails.
 */
function makeDirs(dirs: ReadonlyArray<[string, Record<string, string | null>]>): void {
  const made: string[] = [];
  try {
    for (const [dir, files] of dirs) {
      fs.mkdirSync(dir);
      made.push(dir);
      for (const [name, value] of Object.entries(files)) {
        const file = path.join(dir, name.replace(/\?$/, ''));
        if (value !== null && (!name.endsWith('?') || fs.existsSync(file))) fs.writeFileSync(file, value);
      }
    }
  } catch (err) {
    for (const dir of made.reverse()) fs.rmdirSync(dir);
    throw err;
  }
}

/** The limits as the files take them: bytes, and the CFS quota against kCpuPeriodMicros. */
function limitValues(limits: ModelLimits): { bytes: string | null; quota: string | null } {
  const bytes = limitBytes(limits);
  return {
    bytes: bytes === null ? null : String(bytes),
    quota: limits.cpuLimit === null ? null : String(Math.round(limits.cpuLimit * kCpuPeriodMicros)),
  };
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
      const { bytes, quota } = limitValues(limits);
      // Swap would let a model past its limit keep going, slowly: the limit is of memory.
      const cpuMax = quota && `${quota} ${kCpuPeriodMicros}`;
      makeDirs([[dir, { 'memory.max': bytes, 'memory.swap.max?': bytes && '0', 'cpu.max': cpuMax }]]);
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
  return {
    version: 1,
    make(name, limits) {
      const memoryDir = path.join(root, 'memory', memoryPath, name);
      const cpuDir = path.join(root, cpuMount, cpuPath, name);
      const { bytes, quota } = limitValues(limits);
      makeDirs([
        // memory+swap at the same figure: no swapping past the limit (absent without swap accounting).
        [memoryDir, { 'memory.limit_in_bytes': bytes, 'memory.memsw.limit_in_bytes?': bytes }],
        [cpuDir, { 'cpu.cfs_period_us': quota && String(kCpuPeriodMicros), 'cpu.cfs_quota_us': quota }],
      ]);
      return new Cgroup([memoryDir, cpuDir], path.join(memoryDir, 'memory.oom_control'));
    },
  };
}

/**
 * Where this server can make cgroups under `root`, or why it cannot: v2 when the unified hierarchy
 * holds the controllers, else v1's memory and cpu hierarchies. Proven by making (and removing) one:
 * a read-only tree or a non-root server fails here, not at a load.
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
    parent.make(`mme-probe-${process.pid}`, { memoryLimitMb: null, cpuLimit: null }).remove();
  } catch (err) {
    return { reason: `cannot make a cgroup v${parent.version} here (${(err as Error).message.slice(0, 160)})` };
  }
  return parent;
}
