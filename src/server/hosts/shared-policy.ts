/**
 * A shared host (Ray Serve's model multiplexing): many models' slots in one process, on CPU (one
 * CUDA_VISIBLE_DEVICES cannot serve models on different GPUs). A slot is loaded into a running
 * host and released with Unload; the host stays. A slot costs its load's growth (loads run one at a
 * time), at least the smallest session plus the model file. Its policy keeps the host's memory
 * ledger, which placement and recycling read, as slots come and go: placement then costs the same
 * with 10 000 models as with ten. What the host holds beyond base + costs is what unloads freed and
 * the allocator kept.
 */
import { performance } from 'node:perf_hooks';
import type { LoadedMessage } from '../../protocol/messages';
import { IdAllocator, MAX_U32 } from '../../protocol/ids';
import type { WorkerExit } from '../processes/exit-reason';
import type { LostBatch } from './batches-in-flight';
import type { ExitNotice, HostPolicy } from './host-policy';
import type { HostProcess } from './host-process';
import type { ModelSlot } from './model-slot';

/** A shared host in the pool. */
export type SharedHost = HostProcess<SharedPolicy>;

export class SharedPolicy implements HostPolicy {
  readonly mode = 'shared' as const;
  readonly gpuId = -1;
  readonly firstState = 'loading' as const;
  /** Slot ids are u32 and a host may load and unload models for ever: they wrap, skipping the ones held. */
  readonly slotIds = new IdAllocator(MAX_U32);
  /** PSS once started, before any model (bytes); 0 until measured. */
  baseBytes = 0;
  /** PSS at the last measurement (bytes). */
  measuredBytes = 0;
  /** The model taking most of this host's thread, while host-balance.ts says one does: placement goes elsewhere. */
  heavyModel: string | null = null;
  /** What its loaded slots cost (bytes); changed only by the ledger. */
  modelBytes = 0;
  /** How many slots each model name holds, and each loaded slot's cost (fixed at its load). */
  readonly #names = new Map<string, number>();
  readonly #charged = new Map<ModelSlot, number>();

  /** Its slots that have loaded (modelBytes is theirs). */
  get loadedCount(): number {
    return this.#charged.size;
  }

  /** Bytes freed by unloads and not given back, at the last measurement. */
  get wasteBytes(): number {
    return Math.max(0, this.measuredBytes - this.baseBytes - this.modelBytes);
  }

  holdsModel(name: string): boolean {
    return this.#names.has(name);
  }

  env(env: NodeJS.ProcessEnv): void {
    env.MME_SHARED_HOST = '1';
  }

  admit(slot: ModelSlot, held: (id: number) => boolean): number {
    this.#names.set(slot.modelName, (this.#names.get(slot.modelName) ?? 0) + 1);
    return this.slotIds.next(held);
  }

  forgotten(slot: ModelSlot): void {
    const held = this.#names.get(slot.modelName)!;
    if (held > 1) this.#names.set(slot.modelName, held - 1);
    else this.#names.delete(slot.modelName);
    this.modelBytes -= this.#charged.get(slot) ?? 0;
    this.#charged.delete(slot);
  }

  sharedHostId(host: HostProcess): string {
    return host.id;
  }

  cpuShare(slot: ModelSlot): number {
    const elapsedMicros = (performance.now() - slot.loadedAt) * 1000;
    return slot.loadedAt > 0 && elapsedMicros > 0 ? Math.min(1, slot.runMicros / elapsedMicros) : 0;
  }

  loaded(slot: ModelSlot, msg: LoadedMessage): void {
    // Growth alone undercounts a load that reuses memory an unload freed: the session still holds its weights.
    slot.memoryBytes = Math.max(msg.rssGrowthBytes, slot.host.sessionBytes + slot.assignment.onnxBytes);
    this.#charged.set(slot, slot.memoryBytes);
    this.modelBytes += slot.memoryBytes;
    // Loaded into a host that began recycling meanwhile: move on with the others.
    if (slot.host.processState === 'draining') queueMicrotask(() => slot.relocate());
  }

  /** Its slot is empty in the host; nothing is left to release. */
  loadFailed(slot: ModelSlot): void {
    slot.host.forget(slot.slotId);
    slot.ended();
  }

  /** A host runs one load at a time and cannot interrupt one: a load this late means the host is stuck. */
  loadTimeout(slot: ModelSlot, limit: string): string {
    slot.host.opts.log(`[${slot.id}] load in shared host ${slot.host.id} took over ${limit}; killing the host`);
    return `model ${slot.modelName} did not finish loading in shared host ${slot.host.id} within ${limit}; the host was stopped`;
  }

  /**
   * Each running request is told who else was running. The death may be the doing of the load the
   * host was running (one at a time, in order), unless a batch was running (they run beside the
   * loads), or it was a kill at a timeout (that load or batch has failed already). Every other
   * model loading there is displaced: its load starts again in another host.
   */
  exitNotice(exit: WorkerExit, lost: readonly LostBatch<ModelSlot>[], loading: ModelSlot | null): ExitNotice {
    const running = lost.filter((l) => l.running);
    const suspect = exit.reason === 'timeout-kill' || running.length > 0 ? null : loading;
    return {
      exit: { ...exit, runningModels: [...new Set(running.map((l) => l.slot.modelName))] },
      displaced: (slot) => exit.reason !== 'stopped' && slot !== suspect,
    };
  }
}
