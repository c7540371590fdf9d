/** How much memory the model workers may use, and what a model will cost before it is loaded. */
import os from 'node:os';
import type { WorkerMode } from '../../config/types';
import { cgroupMemoryLimit, readOrNull, type ReadFile } from '../../util/cgroup';

/** The container's cgroup memory limit when one is set, never above the machine's memory. */
export function memoryLimitBytes(read: ReadFile = readOrNull, totalmem = os.totalmem()): number {
  return Math.min(cgroupMemoryLimit(read) ?? totalmem, totalmem);
}

/** The explicit budget, else the memory limit minus the reserve. */
export function memoryBudgetBytes(explicitBytes: number, reserveBytes: number, limitBytes: number): number {
  return explicitBytes > 0 ? explicitBytes : Math.max(0, limitBytes - reserveBytes);
}

/**
 * Predicts a model's memory before load as copies × (base + factor × file size), and learns both
 * terms from the models it has seen. base is what a copy costs beyond its weights: a whole worker
 * process (Node + onnxruntime) for a dedicated model, one more session in a shared host; factor is
 * how much memory a byte of .onnx turns into (weights, arena, graph copies), the same in both.
 */
export class MemoryEstimator {
  // Starting points measured on Node 20 + onnxruntime-node 1.30 (README, preload_model table and Workers).
  readonly base = { dedicated: 40 * 2 ** 20, shared: 2 ** 20 };
  factor = 1.5;
  readonly #smallSeen = { dedicated: 0, shared: 0 };
  #largeSeen = 0;

  estimate(onnxBytes: number, copies: number, mode: WorkerMode): number {
    return Math.max(1, copies) * (this.base[mode] + this.factor * onnxBytes);
  }

  /** Folds one measurement in (a running mean, so early guesses fade as real models arrive). */
  learn(onnxBytes: number, copies: number, mode: WorkerMode, measuredBytes: number): void {
    if (copies <= 0 || measuredBytes <= 0) return;
    const perCopy = measuredBytes / copies;
    // Small models measure the base; large ones the factor. The cut keeps each term well conditioned.
    if (onnxBytes < 2 ** 20) {
      this.#smallSeen[mode]++;
      this.base[mode] += (perCopy - this.base[mode]) / this.#smallSeen[mode];
    } else {
      const factor = Math.min(10, Math.max(1, (perCopy - this.base[mode]) / onnxBytes));
      this.#largeSeen++;
      this.factor += (factor - this.factor) / this.#largeSeen;
    }
  }
}
