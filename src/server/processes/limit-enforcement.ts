/**
 * memory_limit_mb and cpu_limit, enforced on a model's worker processes: by a cgroup of the model's
 * own where the server can make one, else memory by the server watching its workers (MemoryWatch),
 * and a CPU limit refused, as nothing short of the kernel can hold a process to it. The cgroups are
 * made under the server's own (/proc/self/cgroup), so a container's or a systemd unit's limit still
 * bounds them, in v2 or v1 as the machine has it. The root is a parameter: tests lay out a fake tree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MmeError } from '../../errors';
import type { Clock, Timer } from '../../util/clock';
import { readOrNull } from '../../util/cgroup';
import { mb } from '../../util/mb';

/** null = none. */
export interface ModelLimits {
  readonly memoryLimitMb: number | null;
  readonly cpuLimit: number | null;
}

/** A worker process of a limited model (HostProcess). */
export interface LimitedProcess {
  readonly pid: number;
  measureMemory(): Promise<number>;
  kill(reason: 'memory-limit', causedBy: string): void;
}

/** One model's enforcement, which each of its worker processes joins at spawn and leaves at exit. */
export interface ProcessLimits {
  /** Called before the process's Started, so before any Load: Node's own start-up runs outside the limits. */
  joined(p: LimitedProcess): void;
  /** It exited and was reaped; true when the limit ended it (its cgroup's OOM kill). */
  left(p: LimitedProcess): boolean;
}

/** What the memory budget counts for a model with memory_limit_mb: the limit, not what its workers measure. */
export function limitBytes(l: ModelLimits): number | null {
  return l.memoryLimitMb === null ? null : l.memoryLimitMb * 2 ** 20;
}

export function isLimited(l: ModelLimits): boolean {
  return l.memoryLimitMb !== null || l.cpuLimit !== null;
}

/** The most workers autoscale plans for a model: more than ceil(cpu_limit) single-threaded runs only share the quota. */
export function workersWithinCpuLimit(maxWorkers: number, cpuLimit: number | null): number {
  return cpuLimit === null ? maxWorkers : Math.min(maxWorkers, Math.ceil(cpuLimit));
}

/** The CFS period quotas are written against (the kernel's default). */
const kCpuPeriodMicros = 100_000;

/** One made cgroup: its directories (one in v2; the memory and the cpu hierarchy's in v1). */
export class Cgroup {
  #oomKillsSeen = 0;

  constructor(
    readonly dirs: readonly string[],
    private readonly eventsFile: string,
  ) {}

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

type WatchOptions = { clock: Clock; log: (line: string) => void };

const kWatchIntervalMs = 1000;

/** A model's cgroup, made at its first worker's spawn and removed when its last worker has exited. */
function cgroupLimits(make: () => Cgroup, log: (line: string) => void): ProcessLimits {
  let cgroup: Cgroup | null = null;
  const members = new Set<LimitedProcess>();
  return {
    joined(p) {
      if (!p.pid) return;
      cgroup ??= make();
      cgroup.join(p.pid);
      members.add(p);
    },
    left(p) {
      if (!members.delete(p) || cgroup === null) return false;
      const oom = cgroup.takeOomKill();
      if (members.size === 0) {
        try {
          cgroup.remove();
        } catch (err) {
          // A process the server did not reap is still in it: the kernel keeps it until that one ends.
          log(`cannot remove cgroup ${cgroup.dirs.join(', ')}: ${(err as Error).message}`);
        }
        cgroup = null;
      }
      return oom;
    },
  };
}

/**
 * memory_limit_mb without cgroups: every interval while any worker runs, their PSS summed, and the
 * largest stopped once the sum is past the limit, as the OOM killer would. Between two checks a
 * worker may pass the limit: the watch bounds what a leak or a large request keeps, not a burst.
 */
export class MemoryWatch implements ProcessLimits {
  readonly #members = new Set<LimitedProcess>();
  #timer: Timer | null = null;

  constructor(
    private readonly name: string,
    private readonly limitBytes: number,
    private readonly opts: WatchOptions,
  ) {}

  joined(p: LimitedProcess): void {
    this.#members.add(p);
    this.#arm();
  }

  /** The watch's kills are the server's own (kill reason memory-limit): the exit says so without help. */
  left(p: LimitedProcess): boolean {
    this.#members.delete(p);
    if (this.#members.size === 0) {
      this.opts.clock.clearTimeout(this.#timer);
      this.#timer = null;
    }
    return false;
  }

  #arm(): void {
    if (this.#timer !== null || this.#members.size === 0) return;
    this.#timer = this.opts.clock.setTimeout(() => void this.#check(), kWatchIntervalMs);
    this.#timer.unref();
  }

  async #check(): Promise<void> {
    const members = [...this.#members];
    const sizes = await Promise.all(members.map((p) => p.measureMemory()));
    const total = sizes.reduce((s, b) => s + b, 0);
    const largest = sizes.indexOf(Math.max(...sizes));
    const p = members[largest];
    // One gone meanwhile took its memory with it.
    if (total > this.limitBytes && this.#members.has(p)) {
      this.opts.log(
        `[${this.name}] its workers use ${mb(total)}, past memory_limit_mb=${this.limitBytes / 2 ** 20}: stopping worker pid ${p.pid} (${mb(sizes[largest])})`,
      );
      // Out of the sums from now on, so no neighbour is stopped for the memory its exit frees.
      this.#members.delete(p);
      p.kill('memory-limit', this.name);
    }
    this.#timer = null;
    this.#arm();
  }
}

let cgroupSeq = 0;

/** The server's way of enforcing limits, chosen once at start: what the start line says. */
export class LimitEnforcement {
  constructor(
    private readonly parent: CgroupParent | { reason: string },
    private readonly opts: WatchOptions,
  ) {}

  /** 'cgroup v1', 'cgroup v2', or 'memory watch' (the server's own). */
  get mode(): string {
    return 'reason' in this.parent ? 'memory watch' : `cgroup v${this.parent.version}`;
  }

  /** The start line's words on it: why there are no cgroups, if there are none. */
  describe(): string {
    return 'reason' in this.parent
      ? `per-model limits: memory_limit_mb by the server watching each worker's memory, cpu_limit refused (no cgroups: ${this.parent.reason})`
      : `per-model limits (memory_limit_mb, cpu_limit): ${this.mode}, under the server's own cgroup`;
  }

  /** The enforcement of one model's limits, or null when it has none; throws when they cannot be held here. */
  forModel(name: string, limits: ModelLimits): ProcessLimits | null {
    if (!isLimited(limits)) return null;
    const memoryBytes = limitBytes(limits);
    const parent = this.parent;
    if (!('reason' in parent)) {
      const cgroupName = `mme-${process.pid}-${++cgroupSeq}-${name.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64)}`;
      return cgroupLimits(() => parent.make(cgroupName, limits), this.opts.log);
    }
    if (limits.cpuLimit !== null)
      throw new MmeError(
        'MME_ERR_BAD_REQUEST',
        `Model ${name} asks for cpu_limit=${limits.cpuLimit}, which this server cannot enforce: it cannot make cgroups (${parent.reason}). Load it without cpu_limit, or run the server as root with a writable cgroup tree.`,
      );
    this.opts.log(
      `[${name}] memory_limit_mb=${limits.memoryLimitMb} (${mb(memoryBytes!)}) is watched by the server (no cgroups)`,
    );
    return new MemoryWatch(name, memoryBytes!, this.opts);
  }
}
