/**
 * What differs between a dedicated worker and a shared host, fixed where the process is made. The
 * two policies and kModeTraits are the only code that knows which mode a host is in.
 */
import type { WorkerMode } from '../../config/types';
import type { Frame, InferMessage, LoadedMessage } from '../../protocol/messages';
import type { Clock } from '../../util/clock';
import type { KillReason, WorkerExit } from '../processes/exit-reason';
import type { ProcessState, WorkerState } from '../processes/worker-state';
import type { Job } from '../jobs/job';
import type { BatchesView, LostBatch } from './batches-in-flight';

/**
 * What a mode means before any host is made. ownProcess: more workers add compute (a shared host
 * runs one session at a time); promotedTo: where autoscale moves a hot model of this mode.
 */
export const kModeTraits: Readonly<Record<WorkerMode, { ownProcess: boolean; promotedTo: WorkerMode | null }>> = {
  dedicated: { ownProcess: true, promotedTo: null },
  shared: { ownProcess: false, promotedTo: 'dedicated' },
};

/** What a policy and a slot see of the process the slot is in (HostProcess), so neither imports it. */
export interface SlotHost {
  readonly id: string;
  readonly pid: number;
  readonly clock: Clock;
  readonly policy: HostPolicy;
  /** performance.now() at spawn: a load's wait for start-up counts from here or from its assignment. */
  readonly spawnedAt: number;
  /** What the smallest session costs in it (bytes), measured by a shared host at start: the least a model is charged. */
  readonly sessionBytes: number;
  readonly processState: ProcessState;
  readonly hasStarted: boolean;
  readonly killedBy: KillReason | null;
  readonly limited: boolean;
  readonly batches: BatchesView<PolicySlot>;
  /** Its slot id. */
  admit(slot: PolicySlot, maxFrameBytes: number): number;
  send(frame: Frame): void;
  sendBatch(slot: PolicySlot, msg: InferMessage, jobs: readonly Job[]): void;
  forget(slotId: number): void;
  kill(reason: KillReason, causedBy?: string | null): void;
  stop(): Promise<WorkerExit>;
  measureMemory(): Promise<number>;
}

/** What a policy sees of a model's slot in a process (ModelSlot). */
export interface PolicySlot {
  readonly id: string;
  readonly modelName: string;
  readonly slotId: number;
  readonly host: SlotHost;
  readonly exited: Promise<WorkerExit>;
  readonly onnxBytes: number;
  readonly concurrentBatches: boolean;
  readonly handlerPath: string | null;
  /** performance.now() at its Loaded (0 before), and its session runs' time since, µs. */
  readonly loadedAt: number;
  readonly runMicros: number;
  memoryBytes: number;
  /** Its slot in the host is empty (released, or never loaded): it ends, stopped. */
  ended(): void;
  /** Sends Unload, and kills the host if it does not answer within the load timeout. */
  unload(): void;
  relocate(): void;
  log(line: string): void;
}

/** What each slot of a process that exited is told; `displaced`: not its doing, so its load may go elsewhere. */
export interface ExitNotice {
  readonly exit: WorkerExit;
  displaced(slot: PolicySlot): boolean;
}

export interface HostPolicy {
  readonly mode: WorkerMode;
  /** CUDA_VISIBLE_DEVICES, or -1. */
  readonly gpuId: number;
  /** A dedicated worker's process may still be starting; a shared host's slot loads at once. */
  readonly firstState: WorkerState;
  env(env: NodeJS.ProcessEnv): void;
  slotId(held: (id: number) => boolean): number;
  /** None for a process of its own; its log lines are tagged with this, or with its one slot's worker id. */
  sharedHostId?(host: SlotHost): string;
  /**
   * The fraction of a thread its session runs have taken since its load (0–1), where that is timed;
   * none in a dedicated worker's process, which runs no one else's sessions: there is no share to take.
   */
  cpuShare?(slot: PolicySlot): number;
  /** Ends the slot's part: resolves once that is done. */
  release(slot: PolicySlot): Promise<WorkerExit>;
  /** What the slot costs now (bytes), kept as its memoryBytes. */
  measure(slot: PolicySlot, exited: boolean): Promise<number>;
  loaded?(slot: PolicySlot, msg: LoadedMessage): void;
  /** `first` when this is the load's outcome (not a late one). */
  loadFailed(slot: PolicySlot, first: boolean): void;
  /** What the MME_ERR_LOAD_TIMEOUT of a load that ran out of `limit` says (the slot then kills its host). */
  loadTimeout(slot: PolicySlot, limit: string): string;
  exitNotice(exit: WorkerExit, lost: readonly LostBatch<PolicySlot>[], loading: PolicySlot | null): ExitNotice;
}
