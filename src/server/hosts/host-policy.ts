/**
 * What differs between a dedicated worker and a shared host, fixed where the process is made. The
 * two policies and kModeTraits are the only code that knows which mode a host is in. A hook a
 * policy leaves out does the plainer thing, said at its call.
 */
import type { WorkerMode } from '../../config/types';
import type { LoadedMessage } from '../../protocol/messages';
import type { WorkerExit } from '../processes/exit-reason';
import type { WorkerState } from '../processes/worker-state';
import type { LostBatch } from './batches-in-flight';
import type { HostProcess } from './host-process';
import type { ModelSlot } from './model-slot';

/**
 * What a mode means before any host is made. ownProcess: more workers add compute (a shared host
 * runs one session at a time); promotedTo: where autoscale moves a hot model of this mode.
 */
export const kModeTraits: Readonly<Record<WorkerMode, { ownProcess: boolean; promotedTo: WorkerMode | null }>> = {
  dedicated: { ownProcess: true, promotedTo: null },
  shared: { ownProcess: false, promotedTo: 'dedicated' },
};

/** What each slot of a process that exited is told; `displaced`: not its doing, so its load may go elsewhere. */
export interface ExitNotice {
  readonly exit: WorkerExit;
  displaced(slot: ModelSlot): boolean;
}

export interface HostPolicy {
  readonly mode: WorkerMode;
  /** CUDA_VISIBLE_DEVICES, or -1. */
  readonly gpuId: number;
  /** A dedicated worker's process may still be starting; a shared host's slot loads at once. */
  readonly firstState: WorkerState;
  env(env: NodeJS.ProcessEnv): void;
  /** The slot id for `slot`, which a shared host's ledger now counts. */
  admit?(slot: ModelSlot, held: (id: number) => boolean): number;
  /** `slot` left its host: the ledger lets it go. */
  forgotten?(slot: ModelSlot): void;
  /** None for a process of its own; its log lines are tagged with this, or with its one slot's worker id. */
  sharedHostId?(host: HostProcess): string;
  /** The fraction of a thread its session runs have taken since its load (0–1), where others' runs share it. */
  cpuShare?(slot: ModelSlot): number;
  /** The slot's end when its process ends with it; resolves once that is done. */
  release?(slot: ModelSlot): Promise<WorkerExit> | undefined;
  /** What the slot costs now (bytes), kept as its memoryBytes, when that is measured rather than fixed at its load. */
  measure?(slot: ModelSlot, exited: boolean): Promise<number>;
  loaded?(slot: ModelSlot, msg: LoadedMessage): void;
  /** `first` when this is the load's outcome (not a late one). */
  loadFailed(slot: ModelSlot, first: boolean): void;
  /** What the MME_ERR_LOAD_TIMEOUT of a load that ran out of `limit` says (the slot then kills its host). */
  loadTimeout(slot: ModelSlot, limit: string): string;
  exitNotice?(exit: WorkerExit, lost: readonly LostBatch<ModelSlot>[], loading: ModelSlot | null): ExitNotice;
}
