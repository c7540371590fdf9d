/**
 * One model's place in a worker process (TorchServe's worker of a model, a Ray Serve multiplexed
 * model): what the model's worker set sees as one of its workers, and the only WorkerSlot. It
 * shares its host's fate (a crash, a kill for a timeout). Its states are the worker table of
 * processes/worker-state.ts. What its host's policy decides: a dedicated worker's slot starts with
 * its process and leaves with it, and costs the process's PSS; a shared host's slot is loaded into
 * a running host, released with Unload, and costs its load's growth. It sees its host (HostProcess,
 * host-process.ts) only as a SlotHost, so the host may hold its slots without an import cycle.
 */
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import type { Clock, Timer } from '../../util/clock';
import {
  MessageKind,
  type ChunkMessage,
  type Frame,
  type InferMessage,
  type LoadedMessage,
  type ResultMessage,
} from '../../protocol/messages';
import type { Job } from '../jobs/job';
import { loadExitError, type KillReason, type WorkerExit } from '../processes/exit-reason';
import { SlotLifecycle, type SlotView } from '../processes/slot-lifecycle';
import type { Assignment, InFlightBatch, WorkerListener, WorkerSlot } from '../processes/worker-slot';
import type { ProcessState } from '../processes/worker-state';
import type { BatchesView } from './batches-in-flight';

/** What a slot needs of the worker process it is in: HostProcess's side of their calls. */
export interface SlotHost {
  readonly id: string;
  readonly pid: number;
  /** Its HostPolicy's answer: a shared host, or a dedicated worker's process. */
  readonly policy: { readonly shared: boolean };
  readonly gpuId: number;
  readonly clock: Clock;
  /** When it was spawned (performance.now()). */
  readonly spawnedAt: number;
  /** What the smallest session costs in it (bytes). */
  readonly sessionBytes: number;
  readonly hasStarted: boolean;
  readonly killed: boolean;
  readonly processState: ProcessState;
  /** The batches its slots sent and it has not answered in full. */
  readonly batches: BatchesView<ModelSlot>;
  /** Takes the slot in: its slot id. */
  admit(slot: ModelSlot, maxFrameBytes: number): number;
  send(frame: Frame): void;
  sendBatch(slot: ModelSlot, msg: InferMessage, jobs: readonly Job[]): void;
  forget(slotId: number): void;
  kill(reason: KillReason, causedBy?: string | null): void;
  stop(): Promise<WorkerExit>;
  measureMemory(): Promise<number>;
}

export class ModelSlot implements WorkerSlot {
  readonly id: string;
  readonly startTime = new Date();
  readonly #life: SlotLifecycle;
  displaced = false;
  spawnMicros = 0;
  readonly exited: Promise<WorkerExit>;
  readonly slotId: number;
  #listener: WorkerListener | null = null;
  #unloadTimer: Timer | null = null;
  #loadSent = false;
  #exitInfo: WorkerExit | null = null;
  readonly #assignedAt = performance.now();
  /** Its host had started when the slot was admitted: its load waited for no start-up. */
  readonly #hostWasUp: boolean;
  /** When its Loaded arrived (performance.now()), and what its session runs have taken since, µs (the host's latest figure). */
  #loadedAt = 0;
  #runMicros = 0;
  #resolveExit!: (e: WorkerExit) => void;

  constructor(
    private readonly assignment: Assignment,
    readonly host: SlotHost,
    private readonly log: (line: string) => void,
  ) {
    this.id = assignment.id;
    const shared = host.policy.shared;
    // A dedicated worker's process may still be starting; a shared host's slot is loading from the start.
    this.#life = new SlotLifecycle(
      () => `worker ${this.id}`,
      shared ? 'loading' : 'starting',
      assignment.capacity,
      host.clock,
    );
    this.exited = new Promise((r) => (this.#resolveExit = r));
    this.#life.bound(assignment.loadTimeoutMs, () => this.#loadTimedOut());
    this.slotId = host.admit(this, assignment.maxFrameBytes);
    this.#hostWasUp = host.hasStarted;
    if (host.hasStarted) this.sendLoad();
  }

  get lifecycle(): SlotView {
    return this.#life;
  }

  get modelName(): string {
    return this.assignment.load.modelName;
  }

  get pid(): number {
    return this.host.pid;
  }

  get gpuId(): number {
    return this.host.gpuId;
  }

  /** The shared host it is in, or null for a process of its own. */
  get hostId(): string | null {
    return this.host.policy.shared ? this.host.id : null;
  }

  /** Its batches run at once (a preload_model worker), not one after another. */
  get concurrentBatches(): boolean {
    return this.assignment.load.concurrentBatches;
  }

  get inFlightBatches(): number {
    return this.host.batches.of(this);
  }

  get inFlightRequests(): number {
    return this.host.batches.requestsOf(this);
  }

  get backlog(): number {
    return this.host.batches.size;
  }

  get runMicros(): number {
    return this.#runMicros;
  }

  /** In a shared host: the fraction of the host's thread its session runs have taken since its load (0–1). */
  get cpuShare(): number | undefined {
    if (!this.host.policy.shared) return undefined;
    const elapsedMicros = (performance.now() - this.#loadedAt) * 1000;
    return this.#loadedAt > 0 && elapsedMicros > 0 ? Math.min(1, this.#runMicros / elapsedMicros) : 0;
  }

  get isIdle(): boolean {
    return !this.host.killed && this.#life.idle(this.inFlightBatches);
  }

  get isVacant(): boolean {
    return this.isIdle && this.inFlightBatches === 0;
  }

  /** Its Load is in the host's one-at-a-time chain of loads, not yet answered. */
  get loadPending(): boolean {
    return this.#loadSent && !this.#life.settled;
  }

  /** The host has started (or had): send the Load. */
  sendLoad(): void {
    if (this.#life.settled) return;
    this.#loadSent = true;
    // Process start-up this load waited for: all of it for a fresh process, the rest of it for a spare still starting.
    if (!this.#hostWasUp)
      this.spawnMicros = Math.round((performance.now() - Math.max(this.host.spawnedAt, this.#assignedAt)) * 1000);
    this.#life.loading();
    this.host.send({
      kind: MessageKind.Load,
      msg: { ...this.assignment.load, slot: this.slotId, shared: this.host.policy.shared },
    });
  }

  listen(listener: WorkerListener): void {
    this.#listener = listener;
  }

  /** A preload_model worker runs up to `capacity` batches at once; scaling it changes that. */
  resize(capacity: number): void {
    this.#life.resize(capacity);
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    msg.slot = this.slotId;
    this.host.sendBatch(this, msg, jobs);
  }

  holds(job: Job): boolean {
    return this.host.batches.jobOf(this, job.id) === job;
  }

  heldJob(id: number): Job | undefined {
    return this.host.batches.jobOf(this, id);
  }

  cancel(job: Job): void {
    this.host.send({ kind: MessageKind.Cancel, msg: { id: job.id } });
  }

  acknowledge(job: Job, bytes: number): void {
    this.host.send({ kind: MessageKind.ChunkAck, msg: { id: job.id, bytes } });
  }

  /** A run cannot be stopped inside a process: the process goes, with every model in it (they reload elsewhere). */
  kill(reason: KillReason): void {
    this.host.kill(reason, this.modelName);
  }

  retire(): void {
    this.#life.retire();
  }

  /**
   * Ends its part and resolves once that is done. A dedicated worker: its process is stopped. A
   * shared host's slot: its session is released, after the batches it sent there, once the host
   * confirms; a host that does not answer within the model's load timeout is stuck, and killed.
   */
  stop(): Promise<WorkerExit> {
    this.retire();
    if (!this.host.policy.shared) return this.host.stop();
    if (!this.#exitInfo && !this.#unloadTimer) {
      this.host.send({ kind: MessageKind.Unload, msg: { slot: this.slotId } });
      this.#unloadTimer = this.host.clock.setTimeout(() => {
        this.log(
          `[${this.id}] shared host ${this.host.id} did not release the model within ${this.assignment.loadTimeoutMs / 1000} s; killing the host`,
        );
        this.host.kill('timeout-kill', this.modelName);
      }, this.assignment.loadTimeoutMs);
    }
    return this.exited;
  }

  /** A dedicated worker's process's PSS, read now; a shared host's slot: its load's cost. */
  async measureMemory(): Promise<number> {
    if (this.host.policy.shared) return this.#exitInfo ? 0 : this.#life.memoryBytes;
    const bytes = await this.host.measureMemory();
    this.#life.measured(bytes);
    return bytes;
  }

  onLoaded(msg: LoadedMessage): void {
    if (!this.#life.succeed(msg)) return;
    this.#loadedAt = performance.now();
    if (!this.host.policy.shared) return;
    // Growth alone undercounts a load that reuses memory an unload freed: the session still holds its weights.
    this.#life.measured(Math.max(msg.rssGrowthBytes, this.host.sessionBytes + this.assignment.onnxBytes));
    // Loaded into a host that began recycling meanwhile: move on with the others.
    if (this.host.processState === 'draining') queueMicrotask(() => this.relocate());
  }

  onLoadFailed(err: MmeError): void {
    const failed = this.#life.fail(err);
    if (!this.host.policy.shared) {
      if (failed) this.host.kill('stopped');
      return;
    }
    // Its slot is empty in the host; nothing is left to release.
    this.host.forget(this.slotId);
    this.#end({ code: null, signal: null, reason: 'stopped', causedBy: null }, [], []);
  }

  onAnswered(batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    // The host reports the model's run time since its load: the metric takes the growth.
    const ran = msg.runMicros - this.#runMicros;
    if (ran > 0) {
      this.#runMicros = msg.runMicros;
      this.assignment.onRan?.(ran);
    }
    this.#listener?.onResult(this, batch, msg, done);
  }

  onChunk(msg: ChunkMessage): void {
    this.#listener?.onChunk(this, msg);
  }

  onUnloaded(): void {
    this.#end({ code: 0, signal: null, reason: 'stopped', causedBy: null }, [], []);
  }

  /** `displaced`: the host's death is not this model's doing, so a load in progress may be tried elsewhere. */
  onHostExit(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[], displaced: boolean): void {
    if (!this.#life.settled) {
      this.displaced = displaced;
      this.#life.fail(loadExitError(this.id, exit));
    }
    this.#end(exit, running, waiting);
  }

  /** The host is being recycled: the model's worker set starts it elsewhere, then retires this one. */
  relocate(): void {
    if (this.#life.state === 'ready') this.#listener?.onRelocate(this);
  }

  #loadTimedOut(): void {
    const limit = `${this.assignment.loadTimeoutMs / 1000} s (model_load_timeout)`;
    if (!this.host.policy.shared) {
      if (
        this.#life.fail(
          new MmeError(
            'MME_ERR_LOAD_TIMEOUT',
            `worker ${this.id} did not finish loading within ${limit}; it was stopped`,
          ),
        )
      )
        this.host.kill('timeout-kill', this.modelName);
      return;
    }
    // A host runs one load at a time and cannot interrupt one: a load this late means the host is stuck.
    this.log(`[${this.id}] load in shared host ${this.host.id} took over ${limit}; killing the host`);
    this.#life.fail(
      new MmeError(
        'MME_ERR_LOAD_TIMEOUT',
        `model ${this.modelName} did not finish loading in shared host ${this.host.id} within ${limit}; the host was stopped`,
      ),
    );
    this.host.kill('timeout-kill', this.modelName);
  }

  #end(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void {
    if (this.#exitInfo) return;
    this.#exitInfo = exit;
    this.host.clock.clearTimeout(this.#unloadTimer);
    this.#life.ended(exit);
    this.#resolveExit(exit);
    this.#listener?.onExit(this, exit, running, waiting);
  }
}
