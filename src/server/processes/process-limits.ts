/**
 * What a model's limits (memory_limit_mb, cpu_limit) are, and what enforcing them sees of its
 * worker processes: limit-enforcement.ts chooses how they are held, cgroup.ts or memory-watch.ts holds them.
 */

/** A model's limits (null = none). */
export interface ModelLimits {
  readonly memoryLimitMb: number | null;
  readonly cpuLimit: number | null;
}

/** What enforcement sees of a worker process of a limited model (HostProcess). */
export interface LimitedProcess {
  readonly pid: number;
  measureMemory(): Promise<number>;
  kill(reason: 'memory-limit', causedBy: string): void;
}

/** One model's enforcement, which each of its worker processes joins at spawn and leaves at exit. */
export interface ProcessLimits {
  /**
   * The process was just spawned (before its Started, so before any Load is sent to it): it is
   * held to the limits from now on. Node's own start-up runs before the join, outside them.
   */
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
