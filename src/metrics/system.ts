/**
 * Instance-level metrics, read once per interval: CPU and memory of the container when it runs
 * under a cgroup limit (the machine's, through systeminformation, otherwise) and the disk that
 * holds the models.
 */
import { statfs } from 'node:fs/promises';
import os from 'node:os';
import { cgroupCpuMicros, cgroupMemory, readOrNull, type MemoryReading, type ReadFile } from '../util/cgroup';
import { M, METRICS } from './catalog';
import { gaugeSeries, type Series } from './interval';

const kMiB = 2 ** 20;

export interface SystemSamplerOptions {
  /** A path on the filesystem whose utilization is DiskUtilization. */
  readonly diskPath: string;
  readonly read?: ReadFile;
  readonly machineBytes?: number;
  readonly clockMs?: () => number;
}

export class SystemSampler {
  readonly #read: ReadFile;
  readonly #machineBytes: number;
  readonly #clockMs: () => number;
  #lastCpu: { micros: number; atMs: number } | null = null;

  constructor(readonly opts: SystemSamplerOptions) {
    this.#read = opts.read ?? readOrNull;
    this.#machineBytes = opts.machineBytes ?? os.totalmem();
    this.#clockMs = opts.clockMs ?? (() => performance.now());
  }

  /** Each reading that fails is left out; the others are still reported. */
  async sample(): Promise<Series[]> {
    const [cpu, memory, disk] = await Promise.allSettled([this.#cpuPercent(), this.#memory(), this.#diskPercent()]);
    const out: Series[] = [];
    const gauge = (id: number, value: number) => {
      if (Number.isFinite(value)) out.push(gaugeSeries(METRICS[id], value));
    };
    if (cpu.status === 'fulfilled' && cpu.value !== null) gauge(M.CPUUtilization, cpu.value);
    if (memory.status === 'fulfilled') {
      const { usedBytes, limitBytes } = memory.value;
      gauge(M.MemoryUtilization, (usedBytes / limitBytes) * 100);
      gauge(M.MemoryUsed, usedBytes / kMiB);
      gauge(M.MemoryAvailable, (limitBytes - usedBytes) / kMiB);
    }
    if (disk.status === 'fulfilled') gauge(M.DiskUtilization, disk.value);
    return out;
  }

  /**
   * Sum over cores (0-100 x cores) since the previous call, as SageMaker's CPUUtilization. The
   * cgroup's counter covers exactly this container; systeminformation's load is the machine's.
   * With the counter, the first call only starts the measurement and returns null.
   */
  async #cpuPercent(): Promise<number | null> {
    const micros = cgroupCpuMicros(this.#read);
    if (micros === null) {
      const load = await (await systemInformation()).currentLoad();
      return load.currentLoad * Math.max(1, load.cpus.length);
    }
    const atMs = this.#clockMs();
    const last = this.#lastCpu;
    this.#lastCpu = { micros, atMs };
    if (last === null || atMs <= last.atMs) return null;
    return ((micros - last.micros) / ((atMs - last.atMs) * 1000)) * 100;
  }

  async #memory(): Promise<MemoryReading> {
    const container = cgroupMemory(this.#read, this.#machineBytes);
    if (container !== null) return container;
    const mem = await (await systemInformation()).mem();
    // "available" counts reclaimable cache as free, so used + available = total, as MMS's psutil.
    return { usedBytes: mem.total - mem.available, limitBytes: mem.total };
  }

  /** Used over used + available to unprivileged users, as df computes Use%. */
  async #diskPercent(): Promise<number> {
    const fs = await statfs(this.opts.diskPath);
    const used = (fs.blocks - fs.bfree) * fs.bsize;
    return (used / (used + fs.bavail * fs.bsize)) * 100;
  }
}

/** Only a server outside a cgroup limit reads the machine's figures: the library loads then. */
async function systemInformation(): Promise<typeof import('systeminformation')> {
  return (await import('systeminformation')).default;
}
