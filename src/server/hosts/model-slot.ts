/**
 * One model's place in a worker process (TorchServe's worker of a model, a Ray Serve multiplexed
 * model): what a model's worker set and dispatcher see of a worker. It shares its host's fate; how
 * it starts, leaves and what it costs is its host's policy's.
 */
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import type { Timer } from '../../util/clock';
import { deferred } from '../../util/deferred';
import {
  MessageKind,
  type ChunkMessage,
  type InferMessage,
  type LoadedMessage,
  type LoadMessage,
  type ResultMessage,
} from '../../protocol/messages';
import type { Job } from '../jobs/job';
import { loadExitError, type KillReason, type WorkerExit } from '../processes/exit-reason';
import { workerStates, type WorkerState } from '../processes/worker-state';
import type { InFlightBatch } from './batches-in-flight';
import type { HostProcess } from './host-process';

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

/** Who hears from a worker once it has a model. Called synchronously; must not throw. */
export interface WorkerListener {
  /** Answers to some or all of a batch's jobs; `done` once the worker holds none of it any more. */
  onResult(worker: ModelSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void;
  /** `running` were being computed (they fail); `waiting` were only in its pipe (they may run elsewhere). */
  onExit(worker: ModelSlot, exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void;
  /** The worker's host is being recycled: start its replacement elsewhere, then retire it. */
  onRelocate(worker: ModelSlot): void;
}

/** Its public fields are read-only to all but the slot and its policy. */
export class ModelSlot {
  readonly id: string;
  readonly startTime = new Date();
  readonly #ready = deferred<LoadedMessage>();
  readonly ready = this.#ready.promise;
  readonly #state;
  loaded: LoadedMessage | null = null;
  loadError: MmeError | null = null;
  /** Batches it may hold at once: the pipeline depth, or a preload_model process's concurrent runs (its min_worker). */
  capacity: number;
  /** Bytes: a dedicated worker's PSS, refreshed on describe and before admission; in a shared host, its load's cost. */
  memoryBytes = 0;
  /** Its load failed only because its shared host died of something else's doing: it may load again elsewhere. */
  displaced = false;
  /** Process start-up its load waited for, µs. */
  spawnMicros = 0;
  /** performance.now() at its Loaded (0 before). */
  loadedAt = 0;
  /** Its session runs' time since its load, µs: the host's latest figure. */
  runMicros = 0;
  /** Set once, by its model. */
  listener: WorkerListener | null = null;
  /** The load has an outcome: Loaded, or a failure. */
  #settled = false;
  #loadTimer: Timer | null = null;
  readonly #exit = deferred<WorkerExit>();
  readonly exited = this.#exit.promise;
  readonly slotId: number;
  #unloadTimer: Timer | null = null;
  #loadSent = false;
  #exitInfo: WorkerExit | null = null;
  /** performance.now() its load's wait for start-up counts from; null when it waited for none. */
  readonly #waitsFrom: number | null;

  constructor(
    readonly assignment: Assignment,
    readonly host: HostProcess,
  ) {
    this.id = assignment.id;
    this.#state = workerStates(() => `worker ${this.id}`, this.host.policy.firstState);
    this.capacity = assignment.capacity;
    this.ready.catch(() => undefined);
    this.#loadTimer = host.opts.clock.setTimeout(() => {
      const limit = `${assignment.loadTimeoutMs / 1000} s (model_load_timeout)`;
      const err = new MmeError('MME_ERR_LOAD_TIMEOUT', host.policy.loadTimeout(this, limit));
      if (this.#fail(err)) this.kill('timeout-kill');
    }, assignment.loadTimeoutMs);
    this.slotId = host.admit(this, assignment.maxFrameBytes);
    this.#waitsFrom = host.hasStarted ? null : Math.max(host.spawnedAt, performance.now());
    if (host.hasStarted) this.sendLoad();
  }

  get state(): WorkerState {
    return this.#state.state;
  }

  get modelName(): string {
    return this.assignment.load.modelName;
  }

  get pid(): number {
    return this.host.pid;
  }

  /** null for a process of its own. */
  get sharedHostId(): string | null {
    return this.host.policy.sharedHostId?.(this.host) ?? null;
  }

  /** Its batches run at once (a preload_model worker), not one after another. */
  get concurrentBatches(): boolean {
    return this.assignment.load.concurrentBatches;
  }

  get inFlightBatches(): number {
    return this.host.batches.of(this);
  }

  get isIdle(): boolean {
    return this.host.killedBy === null && this.state === 'ready' && this.inFlightBatches < this.capacity;
  }

  get isVacant(): boolean {
    return this.isIdle && this.inFlightBatches === 0;
  }

  /** Its Load is in the host's one-at-a-time chain of loads, not yet answered. */
  get loadPending(): boolean {
    return this.#loadSent && !this.#settled;
  }

  sendLoad(): void {
    if (this.#settled) return;
    this.#loadSent = true;
    // All of a fresh process's start-up, the rest of it for a spare still starting.
    if (this.#waitsFrom !== null) this.spawnMicros = Math.round((performance.now() - this.#waitsFrom) * 1000);
    // A worker retired while it started stays stopping: it loads, but serves nothing.
    if (this.state === 'starting') this.#state.to('loading');
    const msg = { ...this.assignment.load, slot: this.slotId, shared: this.sharedHostId !== null };
    this.host.send({ kind: MessageKind.Load, msg });
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    msg.slot = this.slotId;
    this.host.sendBatch(this, msg, jobs);
  }

  cancel(job: Job): void {
    this.host.send({ kind: MessageKind.Cancel, msg: { id: job.id } });
  }

  /** A run cannot be stopped inside a process: the process goes, with every model in it (they reload elsewhere). */
  kill(reason: KillReason): void {
    this.host.kill(reason, this.modelName);
  }

  /** Out of dispatch: it finishes what it holds; stop() then ends it. */
  retire(): void {
    if (this.#state.can('stopping')) this.#state.to('stopping');
  }

  /** Unless its process ends with it, its session is released after the batches it sent there, once the host confirms. */
  stop(): Promise<WorkerExit> {
    this.retire();
    const released = this.host.policy.release?.(this);
    if (released) return released;
    this.unload();
    return this.exited;
  }

  /** A host that does not answer within the model's load timeout is stuck, and killed. */
  unload(): void {
    if (this.#exitInfo || this.#unloadTimer) return;
    this.host.send({ kind: MessageKind.Unload, msg: { slot: this.slotId } });
    this.#unloadTimer = this.host.opts.clock.setTimeout(() => {
      this.host.opts.log(
        `[${this.id}] process ${this.host.id} (pid ${this.pid}) did not release the model within ${this.assignment.loadTimeoutMs / 1000} s; killing it`,
      );
      this.kill('timeout-kill');
    }, this.assignment.loadTimeoutMs);
  }

  /** Bytes, 0 once it is gone; kept as its memoryBytes (unless measured, fixed at its load). */
  async measureMemory(): Promise<number> {
    const exited = this.#exitInfo !== null;
    return (await this.host.policy.measure?.(this, exited)) ?? (exited ? 0 : this.memoryBytes);
  }

  onLoaded(msg: LoadedMessage): void {
    if (this.#settled) return; // a late answer is ignored
    this.#settle();
    this.loaded = msg;
    if (this.state === 'loading') this.#state.to('ready');
    this.#ready.resolve(msg);
    this.loadedAt = performance.now();
    this.host.policy.loaded?.(this, msg);
  }

  onLoadFailed(err: MmeError): void {
    this.host.policy.loadFailed(this, this.#fail(err));
  }

  /** Its slot in the host is empty (released, or never loaded): it ends, stopped. */
  ended(code: number | null = null): void {
    this.#end({ code, signal: null, reason: 'stopped', causedBy: null }, [], []);
  }

  onAnswered(batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    // The host reports the model's run time since its load: the metric takes the growth.
    const ran = msg.runMicros - this.runMicros;
    if (ran > 0) {
      this.runMicros = msg.runMicros;
      this.assignment.onRan?.(ran);
    }
    this.listener?.onResult(this, batch, msg, done);
  }

  /** Once a streamed chunk reached its client, the acknowledgement lets the handler send that much more. */
  onChunk(msg: ChunkMessage): void {
    const job = this.host.batches.jobOf(this, msg.id);
    if (!job) return;
    const ack = () => this.host.send({ kind: MessageKind.ChunkAck, msg: { id: job.id, bytes: msg.body?.length ?? 0 } });
    if (job.opts.onChunk) job.opts.onChunk(msg, ack);
    else ack();
  }

  onHostExit(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[], displaced: boolean): void {
    if (!this.#settled) {
      this.displaced = displaced;
      this.#fail(loadExitError(this.id, exit));
    }
    this.#end(exit, running, waiting);
  }

  relocate(): void {
    if (this.state === 'ready') this.listener?.onRelocate(this);
  }

  #end(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void {
    if (this.#exitInfo) return;
    this.#exitInfo = exit;
    this.host.opts.clock.clearTimeout(this.#unloadTimer);
    this.#settle();
    // Stopped when the server stopped it, failed otherwise (a failed load stays failed).
    if (this.state !== 'failed') this.#state.to(exit.reason === 'stopped' ? 'stopped' : 'failed');
    this.#exit.resolve(exit);
    this.listener?.onExit(this, exit, running, waiting);
  }

  /** The load failed; false when it had an outcome already. */
  #fail(err: MmeError): boolean {
    if (this.#settled) return false;
    this.#settle();
    this.loadError = err;
    this.#state.to('failed');
    this.#ready.reject(err);
    return true;
  }

  #settle(): void {
    this.#settled = true;
    this.host.opts.clock.clearTimeout(this.#loadTimer);
  }
}
