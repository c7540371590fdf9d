/**
 * A dedicated worker: a process of its own for one model's worker (TorchServe's worker), one slot
 * (numbered 0), on its GPU. Its slot leaves with its process (SIGKILL: onnxruntime-node leaks on
 * session release, so memory only comes back with the process), unless the spare pool takes the
 * process back (`reuse`): then the slot is unloaded and the pool checks what the process kept.
 * A slot costs the process's PSS. No other slot shares its death: none is displaced.
 */
import type { WorkerExit } from '../processes/exit-reason';
import type { HostPolicy } from './host-policy';
import type { ModelSlot } from './model-slot';

export class DedicatedPolicy implements HostPolicy {
  readonly mode = 'dedicated' as const;
  readonly firstState = 'starting' as const;

  /** `reuse`: whether the process may outlive the slot, given back to the spare pool. */
  constructor(
    readonly gpuId: number,
    private readonly reuse: (slot: ModelSlot) => boolean = () => false,
  ) {}

  env(env: NodeJS.ProcessEnv): void {
    if (this.gpuId >= 0) env.CUDA_VISIBLE_DEVICES = String(this.gpuId);
  }

  release(slot: ModelSlot): Promise<WorkerExit> | undefined {
    return this.reuse(slot) ? undefined : slot.host.stop();
  }

  /** Once unloaded its process may live on as a spare: the slot costs nothing then. */
  async measure(slot: ModelSlot, exited: boolean): Promise<number> {
    slot.memoryBytes = exited ? 0 : await slot.host.measureMemory();
    return slot.memoryBytes;
  }

  loadFailed(slot: ModelSlot, first: boolean): void {
    if (first) slot.host.kill('stopped');
  }

  loadTimeout(slot: ModelSlot, limit: string): string {
    return `worker ${slot.id} did not finish loading within ${limit}; it was stopped`;
  }
}
