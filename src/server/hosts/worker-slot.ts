/** What a model's worker set and dispatcher need of one worker; its one implementation is ModelSlot. */
import type { WorkerMode } from '../../config/types';
import type { ChunkMessage, InferMessage, LoadedMessage, LoadMessage, ResultMessage } from '../../protocol/messages';
import type { Job } from '../jobs/job';
import type { KillReason, WorkerExit } from '../processes/exit-reason';
import type { MmeError } from '../../errors';
import type { WorkerState } from '../processes/worker-state';

export interface Assignment {
  id: string;
  load: Omit<LoadMessage, 'slot' | 'shared'>;
  loadTimeoutMs: number;
  maxFrameBytes: number;
  capacity: number;
  /** Size of the .onnx file and its external data: weights a session must hold, whatever else it reuses. */
  onnxBytes: number;
  /** Its session runs in a shared host took `micros` more (SharedHostRunTime). */
  onRan?: (micros: number) => void;
}

/** A batch sent to a worker, which owns it until it is answered or the worker ends. */
export interface InFlightBatch {
  readonly msg: InferMessage;
  readonly jobs: readonly Job[];
}

/** Who hears from a worker once it has a model. Called synchronously; must not throw. */
export interface WorkerListener {
  /** Answers to some or all of a batch's jobs; `done` once the worker holds none of it any more. */
  onResult(worker: WorkerSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void;
  onChunk(worker: WorkerSlot, msg: ChunkMessage): void;
  /** `running` were being computed (they fail); `waiting` were only in its pipe (they may run elsewhere). */
  onExit(worker: WorkerSlot, exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void;
  /** The worker's host is being recycled: start its replacement elsewhere, then retire it. */
  onRelocate(worker: WorkerSlot): void;
}

export interface SlotView {
  readonly state: WorkerState;
  readonly ready: Promise<LoadedMessage>;
  readonly loaded: LoadedMessage | null;
  readonly loadError: MmeError | null;
  /** Batches it may hold at once: the pipeline depth, or a preload_model process's concurrent runs. */
  readonly capacity: number;
  /** Bytes: a dedicated worker's PSS, refreshed on describe and before admission; in a shared host, its load's cost. */
  readonly memoryBytes: number;
}

export interface WorkerSlot {
  readonly id: string;
  readonly pid: number;
  readonly gpuId: number;
  readonly startTime: Date;
  readonly lifecycle: SlotView;
  /** Its load failed only because its shared host died of something else's doing: it may load again elsewhere. */
  readonly displaced?: boolean;
  /** Process start-up its load waited for, µs. */
  readonly spawnMicros: number;
  readonly exited: Promise<WorkerExit>;
  readonly inFlightBatches: number;
  readonly inFlightRequests: number;
  /** Batches ahead of a new one in its process (a shared host's, all models'): what "least busy" compares. */
  readonly backlog: number;
  readonly mode: WorkerMode;
  /** null for a process of its own. */
  readonly sharedHostId: string | null;
  /** In a shared host: the share of the host's thread its runs have taken since its load (0–1). */
  readonly cpuShare: number | undefined;
  readonly isIdle: boolean;
  /** Idle with nothing in flight. */
  readonly isVacant: boolean;
  listen(listener: WorkerListener): void;
  run(msg: InferMessage, jobs: readonly Job[]): void;
  holds(job: Job): boolean;
  heldJob(id: number): Job | undefined;
  cancel(job: Job): void;
  /** `bytes` of `job`'s streamed chunks reached its client: the handler may send that much more. */
  acknowledge(job: Job, bytes: number): void;
  /** A scaled preload_model process holds up to `capacity` batches from now on. */
  resize(capacity: number): void;
  kill(reason: KillReason): void;
  /** Out of dispatch: it finishes what it holds; stop() then ends it. */
  retire(): void;
  stop(): Promise<WorkerExit>;
  /** Bytes, 0 once it is gone; kept as its lifecycle's memoryBytes. */
  measureMemory(): Promise<number>;
}
