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
import { MessageKind, type Frame, type InferMessage, type ResultMessage } from '../../protocol/messages';
import type { Job } from '../jobs/job';
import { loadExitError, type KillReason, type WorkerExit } from '../processes/exit-reason';
import { FramedProcess, type LostBatch, type SpawnOptions } from '../processes/framed-process';
import type { Assignment, InFlightBatch, WorkerSlot, WorkerListener } from '../processes/worker-slot';
import { SlotLifecycle, type SlotView } from '../processes/slot-lifecycle';

export type { SpawnOptions } from '../processes/framed-process';

export class WorkerHandle extends FramedProcess<WorkerHandle> implements WorkerSlot {
  readonly #slot = new SlotLifecycle(() => `worker ${this.id}`, 'starting', 1, this.clock);
  spawnMicros = 0;
  readonly host = null;
  #listener: WorkerListener | null = null;
  #assignment: Assignment | null = null;
  readonly #t0 = performance.now();
  #assignedAt = 0;

  constructor(opts: SpawnOptions, id = `spare-${FramedProcess.spawned + 1}`) {
    super(opts, id);
  }

  /** Gives the worker its model; `ready` settles when it is loaded or failed. */
  assign(assignment: Assignment): this {
    this.#assignment = assignment;
    this.#assignedAt = performance.now();
    this.#slot.resize(assignment.capacity);
    this.id = assignment.id;
    this.maxFrameBytes = assignment.maxFrameBytes;
    this.#slot.bound(assignment.loadTimeoutMs, () => {
      this.#failLoad(new MmeError('MME_ERR_LOAD_TIMEOUT', `worker ${this.id} did not finish loading within ${assignment.loadTimeoutMs / 1000} s (model_load_timeout); it was stopped`), 'timeout-kill');
    });
    if (this.hasStarted) this.#sendLoad();
    return this;
  }

  get lifecycle(): SlotView {
    return this.#slot;
  }

  listen(listener: WorkerListener): void {
    this.#listener = listener;
  }

  #sendLoad(): void {
    this.#slot.loading();
    this.send({ kind: MessageKind.Load, msg: { ...this.#assignment!.load, slot: 0, shared: false } });
  }

  get inFlightCount(): number {
    return this.heldFor(this);
  }

  get requestsInFlight(): number {
    return this.requestsHeldFor(this);
  }

  get backlog(): number {
    return this.heldFor(this);
  }

  get isIdle(): boolean {
    return !this.killed && this.#slot.idle(this.heldFor(this));
  }

  get isVacant(): boolean {
    return this.isIdle && this.heldFor(this) === 0;
  }

  /** A preload_model process runs up to `capacity` batches at once; scaling it changes that. */
  resize(capacity: number): void {
    this.#slot.resize(capacity);
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    this.sendBatch(this, msg, jobs);
  }

  holds(job: Job): boolean {
    return this.holdsFor(this, job);
  }

  heldJob(id: number): Job | undefined {
    return this.jobFor(this, id);
  }

  cancel(job: Job): void {
    this.send({ kind: MessageKind.Cancel, msg: { id: job.id } });
  }

  acknowledge(job: Job, bytes: number): void {
    this.send({ kind: MessageKind.ChunkAck, msg: { id: job.id, bytes } });
  }

  retire(): void {
    this.#slot.retire();
  }

  /** Stops the process and resolves once it has exited and its memory is released. */
  stop(): Promise<WorkerExit> {
    this.retire();
    return this.endProcess();
  }

  override async measureMemory(): Promise<number> {
    const bytes = await super.measureMemory();
    this.#slot.measured(bytes);
    return bytes;
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
        this.#slot.succeed(frame.msg);
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
    this.#listener?.result(this, batch, msg, done);
  }

  #failLoad(err: MmeError, kill: KillReason): void {
    if (this.#slot.fail(err)) this.kill(kill);
  }

  protected onExit(exit: WorkerExit, lost: Array<LostBatch<WorkerHandle>>): void {
    if (!this.#slot.settled) this.#failLoad(loadExitError(this.id, exit), 'stopped');
    this.#slot.exited(exit);
    this.#listener?.exited(this, exit, lost.filter((l) => l.running).map((l) => l.batch), lost.filter((l) => !l.running).map((l) => l.batch));
  }
}
