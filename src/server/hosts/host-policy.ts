/**
 * What differs between a dedicated worker and a shared host, fixed where the process is made
 * (worker-factory.ts and spare-pool.ts make dedicated ones, host-pool.ts shared ones). The two
 * implementations (dedicated-policy.ts, shared-policy.ts) and kModeTraits are the only code that
 * knows which mode a host is in: the process and its slots ask the policy instead.
 */
import type { WorkerMode } from '../../config/types';
import type { MmeError } from '../../errors';
import type { Frame, InferMessage, LoadedMessage, LoadMessage } from '../../protocol/messages';
import type { Clock } from '../../util/clock';
import type { KillReason, WorkerExit } from '../processes/exit-reason';
import type { ProcessState, WorkerState } from '../processes/worker-state';
import type { Job } from '../jobs/job';
import type { BatchesView, LostBatch } from './batches-in-flight';

/** What a mode means before any host is made: for the code that picks where a model's workers start. */
export interface ModeTraits {
  /** Each worker is a process of its own, so more workers add compute (a shared host runs one session at a time). */
  readonly ownProcess: boolean;
  /** Where autoscale promotes a hot model of this mode to, or null. */
  readonly promotedTo: WorkerMode | null;
}

export const kModeTraits: Readonly<Record<WorkerMode, ModeTraits>> = {
  dedicated: { ownProcess: true, promotedTo: null },
  shared: { ownProcess: false, promotedTo: 'dedicated' },
};

/** What a policy and a slot see of the process the slot is in (HostProcess). */
export interface SlotHost {
  readonly id: string;
  readonly pid: number;
  readonly clock: Clock;
  readonly policy: HostPolicy;
  readonly gpuId: number;
  /** When it was spawned (performance.now()). */
  readonly spawnedAt: number;
  /** What the smallest session costs in it (bytes). */
  readonly sessionBytes: number;
  readonly processState: ProcessState;
  readonly hasStarted: boolean;
  readonly killed: boolean;
  readonly batches: BatchesView<PolicySlot>;
  /** Takes the slot in: its slot id. */
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
  /** Size of the model file and its external data (bytes). */
  readonly onnxBytes: number;
  /** When its Loaded arrived (performance.now(); 0 before), and its session runs' time since, µs. */
  readonly loadedAt: number;
  readonly runMicros: number;
  readonly memoryBytes: number;
  measured(bytes: number): void;
  /** Its slot in the host is empty (released, or never loaded): it ends, stopped. */
  ended(): void;
  /** Sends Unload, and kills the host if it does not answer within the load timeout. */
  unload(): void;
  relocate(): void;
  log(line: string): void;
}

/** What each slot of a process that exited is told. */
export interface ExitNotice {
  readonly exit: WorkerExit;
  /** The process's death is not this slot's doing: a load in progress may be tried elsewhere. */
  displaced(slot: PolicySlot): boolean;
}

export interface HostPolicy {
  readonly mode: WorkerMode;
  /** GPU made visible to the process as CUDA_VISIBLE_DEVICES, or -1. */
  readonly gpuId: number;
  /** A dedicated worker's process may still be starting; a shared host's slot loads at once. */
  readonly firstState: WorkerState;
  env(env: NodeJS.ProcessEnv): void;
  /** A new slot's id in the process; `held` says which ids its slots hold. */
  slotId(held: (id: number) => boolean): number;
  /** The largest frame the process accepts once it also holds a slot allowing `slotMax` (it allowed `hostMax`). */
  maxFrameBytes(hostMax: number, slotMax: number): number;
  /** What the process's log lines are tagged with once it holds slot `slotWorkerId` (a dedicated worker: its model's worker id). */
  label(hostId: string, slotWorkerId: string): string;
  load(load: Omit<LoadMessage, 'slot' | 'shared'>, slotId: number): LoadMessage;
  /** The shared host a slot is in, or null for a process of its own. */
  sharedHostId(host: SlotHost): string | null;
  /** The fraction of a thread its session runs have taken since its load (0–1), where that is timed. */
  cpuShare(slot: PolicySlot): number | undefined;
  /** Ends the slot's part: resolves once that is done. */
  release(slot: PolicySlot): Promise<WorkerExit>;
  /** What the slot costs now (bytes), kept as its memory figure. */
  measure(slot: PolicySlot, exited: boolean): Promise<number>;
  loaded(slot: PolicySlot, msg: LoadedMessage): void;
  /** Its load failed: `first` when this is the load's outcome (not a late one). */
  loadFailed(slot: PolicySlot, first: boolean): void;
  /** The error a load that ran out of `limit` fails with (the slot then kills its host). */
  loadTimeout(slot: PolicySlot, limit: string): MmeError;
  exitNotice(exit: WorkerExit, lost: readonly LostBatch<PolicySlot>[], loading: PolicySlot | null): ExitNotice;
}
