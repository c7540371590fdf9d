/** A model's limits (memory_limit_mb, cpu_limit) and what enforcing them (limit-enforcement.ts) sees of its workers. */

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
