/**
 * One model's place in a shared host: what the model's worker set sees as one of its workers. It
 * shares the host's fate (a crash, a kill for a timeout), and its memory is its own load's cost.
 *
 *   loading ──Loaded──▶ ready ──retire()──▶ stopping ──Unloaded / host exit──▶ stopped
 *      └──── LoadFailed / load timeout / host exit ────────────────────────────▶ failed
 *
 * (the worker table of processes/worker-state.ts, entered at loading: the host is already running)
 */
import { performance } from 'node:perf_hooks';
import { MmeError } from '../../errors';
import { MessageKind, type ChunkMessage, type InferMessage, type LoadedMessage, type ResultMessage } from '../../protocol/messages';
import type { Timer } from '../../util/clock';
import type { Job } from '../jobs/job';
import { loadExitError, type KillReason, type WorkerExit } from '../processes/exit-reason';
import type { Assignment, InFlightBatch, WorkerSlot, WorkerListener } from '../processes/worker-slot';
import { SlotLifecycle, type SlotView } from '../processes/slot-lifecycle';
import type { HostProcess } from './host-process';

export class HostedModel implements WorkerSlot {
  readonly id: string;
  readonly gpuId = -1;
  readonly startTime = new Date();
  readonly #slot: SlotLifecycle;
  displaced = false;
  spawnMicros = 0;
  readonly exited: Promise<WorkerExit>;
  readonly slot: number;
  #listener: WorkerListener | null = null;
  #unloadTimer: Timer | null = null;
  #loadSent = false;
  #exitInfo: WorkerExit | null = null;
  readonly #t0 = performance.now();
  /** When its Loaded arrived (performance.now()), and what its session runs have taken since, µs (the host's latest figure). */
  #loadedAt = 0;
  #runMicros = 0;
  #resolveExit!: (e: WorkerExit) => void;

  constructor(private readonly assignment: Assignment, readonly hostProcess: HostProcess, private readonly log: (line: string) => void) {
    this.id = assignment.id;
    this.#slot = new SlotLifecycle(() => `worker ${this.id}`, 'loading', assignment.capacity, hostProcess.clock);
    this.exited = new Promise((r) => (this.#resolveExit = r));
    this.#slot.bound(assignment.loadTimeoutMs, () => {
      // The host runs one load at a time and cannot interrupt one: a load this late means the host is stuck.
      this.log(`[${this.id}] load in shared host ${hostProcess.id} took over ${assignment.loadTimeoutMs / 1000} s (model_load_timeout); killing the host`);
      this.#slot.fail(new MmeError('MME_ERR_LOAD_TIMEOUT', `model ${this.modelName} did not finish loading in shared host ${hostProcess.id} within ${assignment.loadTimeoutMs / 1000} s (model_load_timeout); the host was stopped`));
      hostProcess.kill('timeout-kill', this.modelName);
    });
    this.slot = hostProcess.admit(this, assignment.maxFrameBytes);
    if (hostProcess.hasStarted) this.sendLoad();
  }

  get lifecycle(): SlotView {
    return this.#slot;
  }

  get modelName(): string {
    return this.assignment.load.modelName;
  }

  get pid(): number {
    return this.hostProcess.pid;
  }

  get host(): string {
    return this.hostProcess.id;
  }

  get inFlightCount(): number {
    return this.hostProcess.heldFor(this);
  }

  get requestsInFlight(): number {
    return this.hostProcess.requestsHeldFor(this);
  }

  get backlog(): number {
    return this.hostProcess.batchCount;
  }

  get runMicros(): number {
    return this.#runMicros;
  }

  /** The fraction of its host's thread its session runs have taken since its load (0–1): how much of the host it uses. */
  get cpuShare(): number {
    const elapsedMicros = (performance.now() - this.#loadedAt) * 1000;
    return this.#loadedAt > 0 && elapsedMicros > 0 ? Math.min(1, this.#runMicros / elapsedMicros) : 0;
  }

  get isIdle(): boolean {
    return !this.hostProcess.killed && this.#slot.idle(this.inFlightCount);
  }

  get isVacant(): boolean {
    return this.isIdle && this.inFlightCount === 0;
  }

  /** Its Load is in the host's one-at-a-time chain of loads, not yet answered. */
  get loadPending(): boolean {
    return this.#loadSent && !this.#slot.settled;
  }

  /** The host has started (or had): send the Load. */
  sendLoad(): void {
    if (this.#slot.settled) return;
    this.#loadSent = true;
    this.spawnMicros = Math.round((performance.now() - this.#t0) * 1000);
    this.hostProcess.control({ kind: MessageKind.Load, msg: { ...this.assignment.load, slot: this.slot, shared: true } });
  }

  listen(listener: WorkerListener): void {
    this.#listener = listener;
  }

  resize(capacity: number): void {
    this.#slot.resize(capacity);
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    msg.slot = this.slot;
    this.hostProcess.runFor(this, { msg, jobs });
  }

  holds(job: Job): boolean {
    return this.hostProcess.holdsFor(this, job);
  }

  heldJob(id: number): Job | undefined {
    return this.hostProcess.jobFor(this, id);
  }

  cancel(job: Job): void {
    this.hostProcess.control({ kind: MessageKind.Cancel, msg: { id: job.id } });
  }

  acknowledge(job: Job, bytes: number): void {
    this.hostProcess.control({ kind: MessageKind.ChunkAck, msg: { id: job.id, bytes } });
  }

  /** A run cannot be stopped inside a shared host either: the host goes, with every model in it (they reload elsewhere). */
  kill(reason: KillReason): void {
    this.hostProcess.kill(reason, this.modelName);
  }

  retire(): void {
    this.#slot.retire();
  }

  /**
   * Releases its session in the host, after the batches it sent there, and resolves once the host
   * confirms. A host that does not answer within the model's load timeout is stuck: it is killed.
   */
  stop(): Promise<WorkerExit> {
    this.retire();
    if (!this.#exitInfo && !this.#unloadTimer) {
      this.hostProcess.control({ kind: MessageKind.Unload, msg: { slot: this.slot } });
      this.#unloadTimer = this.hostProcess.clock.setTimeout(() => {
        this.log(`[${this.id}] shared host ${this.host} did not release the model within ${this.assignment.loadTimeoutMs / 1000} s; killing the host`);
        this.hostProcess.kill('timeout-kill', this.modelName);
      }, this.assignment.loadTimeoutMs);
    }
    return this.exited;
  }

  async measureMemory(): Promise<number> {
    return this.#exitInfo ? 0 : this.#slot.memoryBytes;
  }

  onLoaded(msg: LoadedMessage): void {
    if (!this.#slot.succeed(msg)) return;
    this.#loadedAt = performance.now();
    // Growth alone undercounts a load that reuses memory an unload freed: the session still holds its weights.
    this.#slot.measured(Math.max(msg.rssGrowthBytes, this.hostProcess.sessionBytes + this.assignment.onnxBytes));
    // Loaded into a host that began recycling meanwhile: move on with the others.
    if (this.hostProcess.processState === 'draining') queueMicrotask(() => this.relocate());
  }

  onLoadFailed(err: MmeError): void {
    this.#slot.fail(err);
    // Its slot is empty in the host; nothing is left to release.
    this.hostProcess.forget(this.slot);
    this.#exited({ code: null, signal: null, reason: 'stopped', causedBy: null }, [], []);
  }

  onAnswered(batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    // The host reports the model's run time since its load: the metric takes the growth.
    const ran = msg.runMicros - this.#runMicros;
    if (ran > 0) {
      this.#runMicros = msg.runMicros;
      this.assignment.ran?.(ran);
    }
    this.#listener?.result(this, batch, msg, done);
  }

  onChunk(msg: ChunkMessage): void {
    this.#listener?.chunk(this, msg);
  }

  onUnloaded(): void {
    this.#exited({ code: 0, signal: null, reason: 'stopped', causedBy: null }, [], []);
  }

  /** `displaced`: the host's death is not this model's doing, so a load in progress may be tried elsewhere. */
  onHostExit(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[], displaced: boolean): void {
    if (!this.#slot.settled) {
      this.displaced = displaced;
      this.#slot.fail(loadExitError(this.id, exit));
    }
    this.#exited(exit, running, waiting);
  }

  /** The host is being recycled: the model's worker set starts it elsewhere, then retires this one. */
  relocate(): void {
    if (this.#slot.state === 'ready') this.#listener?.relocate(this);
  }

  #exited(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void {
    if (this.#exitInfo) return;
    this.#exitInfo = exit;
    this.hostProcess.clock.clearTimeout(this.#unloadTimer);
    this.#slot.exited(exit);
    this.#resolveExit(exit);
    this.#listener?.exited(this, exit, running, waiting);
  }
}
