/**
 * memory_limit_mb and cpu_limit, enforced on a model's worker processes: by a cgroup of the model's
 * own (cgroup.ts) where the server can make one, else memory by the server watching its workers
 * (MemoryWatch), and a CPU limit refused, as nothing short of the kernel can hold a process to it.
 */
import { MmeError } from '../../errors';
import type { Clock, Timer } from '../../util/clock';
import { mb } from '../../util/mb';
import type { Cgroup, CgroupParent } from './cgroup';
import { isLimited, limitBytes, type LimitedProcess, type ModelLimits, type ProcessLimits } from './process-limits';

interface WatchOptions {
  clock: Clock;
  log: (line: string) => void;
}

/** How often the memory watch measures a limited model's workers. */
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
  /** `reason`: why there are no cgroups. */
  constructor(
    private readonly parent: CgroupParent | { reason: string },
    private readonly opts: WatchOptions,
  ) {}

  /** 'cgroup v1', 'cgroup v2', or 'memory watch' (the server's own). */
  get mode(): string {
    return 'reason' in this.parent ? 'memory watch' : `cgroup v${this.parent.version}`;
  }

  /** The start line's words on it. */
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
