/**
 * The container's own CPU and memory from its cgroup (v2, else v1). Inside a container the
 * machine's totals say nothing about the limit the kernel's OOM killer enforces, nor about the CPU
 * quota the scheduler throttles it to. `read` returns a file's text or null, so every rule is
 * testable without a cgroup.
 */
import { readFileSync } from 'node:fs';

export type ReadFile = (path: string) => string | null;

/** The file's text, or null when it cannot be read (no cgroup, or not this version's file). */
export const readOrNull: ReadFile = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

export interface MemoryReading {
  readonly usedBytes: number;
  readonly limitBytes: number;
}

const kV2 = '/sys/fs/cgroup';
/** Per version: the directory, the limit and usage files, and memory.stat's inactive page cache. */
const kMemoryFiles = [
  [kV2, 'memory.max', 'memory.current', 'inactive_file'],
  ['/sys/fs/cgroup/memory', 'memory.limit_in_bytes', 'memory.usage_in_bytes', 'total_inactive_file'],
] as const;
const kV1CpuAcct = ['/sys/fs/cgroup/cpuacct', '/sys/fs/cgroup/cpu,cpuacct'];
const kV1Cpu = ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct'];

/**
 * Memory under the cgroup's limit, or null when no limit below the machine's memory is set (v2
 * writes "max"; v1 a page-aligned number near 2^63). Used excludes inactive page cache, which the
 * kernel reclaims before it OOM-kills, as `docker stats` does.
 */
export function cgroupMemory(read: ReadFile, machineBytes: number): MemoryReading | null {
  for (const [dir, limitFile, usageFile, inactiveKey] of kMemoryFiles) {
    const limit = readNumber(read, `${dir}/${limitFile}`);
    if (limit === null) continue;
    const usage = readNumber(read, `${dir}/${usageFile}`);
    if (limit >= machineBytes || usage === null) return null;
    const inactive = statField(read(`${dir}/memory.stat`), inactiveKey) ?? 0;
    return { limitBytes: limit, usedBytes: Math.max(0, usage - inactive) };
  }
  return null;
}

/** The cgroup's memory limit (v2, else v1), or null where none is written as a number ("max"). */
export function cgroupMemoryLimit(read: ReadFile): number | null {
  for (const [dir, limitFile] of kMemoryFiles) {
    const limit = readNumber(read, `${dir}/${limitFile}`);
    if (limit !== null) return limit;
  }
  return null;
}

/** CPU time the cgroup has used so far, in microseconds (v2 cpu.stat usage_usec, v1 cpuacct.usage ns). */
export function cgroupCpuMicros(read: ReadFile): number | null {
  const v2 = statField(read(`${kV2}/cpu.stat`), 'usage_usec');
  if (v2 !== null) return v2;
  for (const dir of kV1CpuAcct) {
    const ns = readNumber(read, `${dir}/cpuacct.usage`);
    if (ns !== null) return ns / 1000;
  }
  return null;
}

/**
 * The CPUs the cgroup's quota allows, rounded up (v2 cpu.max "200000 100000" = 2; v1
 * cpu.cfs_quota_us over cpu.cfs_period_us), or null with no quota ("max", -1) or no cgroup.
 * `docker run --cpus` and a Kubernetes CPU limit set it; the CPU affinity does not show it.
 */
export function cgroupCpuLimit(read: ReadFile): number | null {
  const v2 = /^(\d+) (\d+)$/.exec(read(`${kV2}/cpu.max`)?.trim() ?? '');
  if (v2) return quotaCpus(Number(v2[1]), Number(v2[2]));
  for (const dir of kV1Cpu) {
    // -1 (no quota) is not a number readNumber takes: null, as for a missing file.
    const quota = readNumber(read, `${dir}/cpu.cfs_quota_us`);
    const period = readNumber(read, `${dir}/cpu.cfs_period_us`);
    if (quota !== null && period !== null) return quotaCpus(quota, period);
  }
  return null;
}

function quotaCpus(quota: number, period: number): number | null {
  return quota > 0 && period > 0 ? Math.max(1, Math.ceil(quota / period)) : null;
}

function readNumber(read: ReadFile, path: string): number | null {
  const text = read(path)?.trim();
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : null;
}

/** A `key value` line of a cgroup stat file. */
function statField(text: string | null, key: string): number | null {
  const m = text === null ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}
