/**
 * A dedicated worker: a process of its own for one model's worker (TorchServe's worker), one slot
 * (numbered 0), on its GPU. Its slot leaves with its process (SIGKILL: onnxruntime-node leaks on
 * session release, so memory only comes back with the process), and costs the process's PSS.
 */
import type { WorkerExit } from '../processes/exit-reason';
import type { ExitNotice, HostPolicy } from './host-policy';
import type { ModelSlot } from './model-slot';

export class DedicatedPolicy implements HostPolicy {
  readonly mode = 'dedicated' as const;
  readonly firstState = 'starting' as const;

  constructor(readonly gpuId: number) {}

  env(env: NodeJS.ProcessEnv): void {
    if (this.gpuId >= 0) env.CUDA_VISIBLE_DEVICES = String(this.gpuId);
  }

  admit(): number {
    return 0;
  }

  release(slot: ModelSlot): Promise<WorkerExit> {
    return slot.host.stop();
  }

  async measure(slot: ModelSlot): Promise<number> {
    slot.memoryBytes = await slot.host.measureMemory();
    return slot.memoryBytes;
  }

  loadFailed(slot: ModelSlot, first: boolean): void {
    if (first) slot.host.kill('stopped');
  }

  loadTimeout(slot: ModelSlot, limit: string): string {
    return `worker ${slot.id} did not finish loading within ${limit}; it was stopped`;
  }

  exitNotice(exit: WorkerExit): ExitNotice {
    return { exit, displaced: () => false };
  }
}
