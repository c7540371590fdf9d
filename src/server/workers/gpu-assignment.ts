/**
 * TorchServe's GPU assignment: workers take GPUs round-robin across the whole server, or round-robin
 * over a model's own deviceIds list. -1 means CPU. Pure bookkeeping, so it is testable without a GPU.
 */
export class GpuAssigner {
  #next = 0;
  readonly #perModel = new Map<string, number>();

  constructor(private readonly numberOfGpu: number) {}

  assign(modelName: string, deviceIds: readonly number[] | null): number {
    if (deviceIds && deviceIds.length > 0) {
      const k = this.#perModel.get(modelName) ?? 0;
      this.#perModel.set(modelName, k + 1);
      return deviceIds[k % deviceIds.length];
    }
    if (this.numberOfGpu <= 0) return -1;
    return this.#next++ % this.numberOfGpu;
  }

  forget(modelName: string): void {
    this.#perModel.delete(modelName);
  }
}
