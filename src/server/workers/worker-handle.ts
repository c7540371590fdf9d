/**
 * The server's handle on a dedicated worker: one process, one model. Its process moves through
 * the process table and its model through the worker table (processes/worker-state.ts):
 *
 *   starting ──Started + assign()──▶ loading ──Loaded──▶ ready ──retire()/stop()──▶ stopping ──exit──▶ stopped
 *       └──────────────── exit / LoadFailed / load timeout ───────────────────────────────▶ failed
 *
 * start() spawns the process; assign() gives it a model. A spare worker (SparePool) is started
 * before its model is known, so a load skips process start-up.
 */
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import { MessageKind, type Frame, type InferMessage, type LoadedMessage, type ResultMessage } from '../../protocol/frames';
import type { Job } from '../jobs/job';
import { loadExitError, type KillReason, type WorkerExit } from '../processes/exit-reason';
import { FramedProcess, type LostBatch, type SpawnOptions } from '../processes/framed-process';
import type { Assignment, InFlightBatch, ModelWorker, WorkerListener } from '../processes/model-worker';
import { workerStates, type WorkerState } from '../processes/worker-state';

export type { SpawnOptions } from '../processes/framed-process';

export class WorkerHandle extends FramedProcess<WorkerHandle> implements ModelWorker {
  readonly #state = workerStates(() => `worker ${this.id}`, 'starting');
  loaded: LoadedMessage | null = null;
  loadError: MmeError | null = null;
  spawnMicros = 0;
  capacity = 1;
  memoryBytes = 0;
  readonly host = null;
  #inFlight = 0;
  #listener: WorkerListener | null = null;
  #assignment: Assignment | null = null;
  #loadTimer: NodeJS.Timeout | null = null;
  readonly #t0 = performance.now();
  #assignedAt = 0;
  #loadSettled = false;
  #resolveLoad!: (m: LoadedMessage) => void;
  #rejectLoad!: (e: MmeError) => void;
  readonly ready: Promise<LoadedMessage>;

  constructor(opts: SpawnOptions, id = `spare-${FramedProcess.spawned + 1}`) {
    super(opts, id);
    this.ready = new Promise((resolve, reject) => {
      this.#resolveLoad = resolve;
      this.#rejectLoad = reject;
    });
    this.ready.catch(() => undefined);
  }

  /** Gives the worker its model; `ready` settles when it is loaded or failed. */
  assign(assignment: Assignment): this {
    this.#assignment = assignment;
    this.#assignedAt = performance.now();
    this.id = assignment.id;
    this.maxFrameBytes = assignment.maxFrameBytes;
    this.#loadTimer = setTimeout(() => {
      this.#failLoad(new MmeError('MME_ERR_LOAD_TIMEOUT', `worker ${this.id} did not finish loading within ${assignment.loadTimeoutMs / 1000} s (model_load_timeout); it was stopped`), 'timeout-kill');
    }, assignment.loadTimeoutMs);
    if (this.hasStarted) this.#sendLoad();
    return this;
  }

  get state(): WorkerState {
    return this.#state.state;
  }

  listen(listener: WorkerListener): void {
    this.#listener = listener;
  }

  #sendLoad(): void {
    // A worker retired while it started stays stopping: it loads, but serves nothing.
    if (this.#state.state === 'starting') this.#state.to('loading');
    this.send({ kind: MessageKind.Load, msg: { ...this.#assignment!.load, slot: 0, shared: false } });
  }

  get inFlightCount(): number {
    return this.#inFlight;
  }

  get backlog(): number {
    return this.#inFlight;
  }

  get isIdle(): boolean {
    return this.state === 'ready' && !this.killed && this.#inFlight < this.capacity;
  }

  get isVacant(): boolean {
    return this.isIdle && this.#inFlight === 0;
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    this.sendBatch(this, msg, jobs);
    this.#inFlight++;
  }

  holds(job: Job): boolean {
    return this.holdsFor(this, job);
  }

  cancel(job: Job): void {
    this.send({ kind: MessageKind.Cancel, msg: { id: job.id } });
  }

  acknowledge(job: Job, bytes: number): void {
    this.send({ kind: MessageKind.ChunkAck, msg: { id: job.id, bytes } });
  }

  retire(): void {
    if (this.#state.can('stopping')) this.#state.to('stopping');
  }

  /** Stops the process and resolves once it has exited and its memory is released. */
  stop(): Promise<WorkerExit> {
    this.retire();
    return this.endProcess();
  }

  protected override get concurrent(): boolean {
    return this.#assignment?.load.concurrentBatches ?? false;
  }

  protected started(): void {
    if (!this.#assignment) return;
    // Process start-up this load waited for: all of it for a fresh worker, the rest of it for a spare.
    this.spawnMicros = Math.round((performance.now() - Math.max(this.#t0, this.#assignedAt)) * 1000);
    this.#sendLoad();
  }

  protected frame(frame: Frame): void {
    switch (frame.kind) {
      case MessageKind.Loaded:
        if (this.#loadSettled) return;
        this.#loadSettled = true;
        clearTimeout(this.#loadTimer!);
        this.loaded = frame.msg;
        if (this.state === 'loading') this.#state.to('ready');
        this.#resolveLoad(frame.msg);
        break;
      case MessageKind.LoadFailed:
        this.#failLoad(MmeError.fromWire(frame.msg.error), 'stopped');
        break;
      case MessageKind.Chunk:
        this.#listener?.chunk(this, frame.msg);
        break;
      default:
        break;
    }
  }

  protected answered(_owner: WorkerHandle, batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    if (done) this.#inFlight--;
    this.#listener?.result(this, batch, msg, done);
  }

  #failLoad(err: MmeError, kill: KillReason): void {
    if (this.#loadSettled) return;
    this.#loadSettled = true;
    this.loadError = err;
    clearTimeout(this.#loadTimer!);
    this.#state.to('failed');
    this.kill(kill);
    this.#rejectLoad(err);
  }

  protected ended(exit: WorkerExit, lost: Array<LostBatch<WorkerHandle>>): void {
    clearTimeout(this.#loadTimer!);
    if (!this.#loadSettled) this.#failLoad(loadExitError(this.id, exit), 'stopped');
    if (this.state !== 'failed') this.#state.to(exit.reason === 'stopped' && this.state === 'stopping' ? 'stopped' : 'failed');
    this.#inFlight = 0;
    this.#listener?.exit(this, exit, lost.filter((l) => l.running).map((l) => l.batch), lost.filter((l) => !l.running).map((l) => l.batch));
  }
}
