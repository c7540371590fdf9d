/**
 * A worker with no process behind the WorkerSlot seam: the test decides when it loads, answers,
 * dies or exits after a kill, so lifecycle races are replayed in a chosen order, without sleeps.
 */
import { MmeError } from '../../src/errors';
import type { InferMessage, LoadedMessage, WireResponse } from '../../src/protocol/messages';
import type { Job } from '../../src/server/jobs/job';
import { exitReason, type KillReason, type WorkerExit } from '../../src/server/processes/exit-reason';
import type { Assignment, InFlightBatch, WorkerSlot, WorkerListener } from '../../src/server/processes/worker-slot';
import { SlotLifecycle, type SlotView } from '../../src/server/processes/slot-lifecycle';
import { VirtualClock } from '../helpers/virtual-clock';

export interface FakeOptions {
  /** Report Loaded on the next tick (default); false: the test calls loaded() or failLoad(). */
  autoLoad: boolean;
  /** Exit on the next tick after a kill (default); false: the test calls exit(). */
  autoExit: boolean;
  /** Answer every batch on the next tick with 200 {"id"} (default false). */
  autoAnswer: boolean;
  /** What measureMemory() reports, by model name (default 10 MB). */
  memoryBytes: (model: string) => number;
  /** Starts this many more workers, then refuses (throws, as a full set of shared hosts does); default: never refuses. */
  startsLeft: number;
}

const kLoaded: LoadedMessage = {
  slot: 0, rssGrowthBytes: 0, pid: 0, loadMicros: 1, sessionMicros: 1, executionProvider: 'cpu', inputs: [], outputs: [], streaming: false,
  metadata: { irVersion: 8, producerName: 'fake', producerVersion: '0', domain: '', modelVersion: 0, docString: '', opsets: {}, metadataProps: {} },
};

export class FakeWorker implements WorkerSlot {
  readonly startTime = new Date();
  readonly pid = 0;
  readonly gpuId = -1;
  readonly spawnMicros = 0;
  readonly host = null;
  readonly #slot: SlotLifecycle;
  killedBy: KillReason | null = null;
  exitInfo: WorkerExit | null = null;
  readonly batches: InFlightBatch[] = [];
  readonly cancelled: number[] = [];
  readonly exited: Promise<WorkerExit>;
  #listener: WorkerListener | null = null;
  #resolveExit!: (e: WorkerExit) => void;

  constructor(readonly assignment: Assignment, private readonly fleet: FakeFleet) {
    this.#slot = new SlotLifecycle(() => `fake worker ${this.id}`, 'loading', assignment.capacity, fleet.clock);
    this.exited = new Promise((r) => (this.#resolveExit = r));
    if (fleet.options.autoLoad) setImmediate(() => this.load());
  }

  get lifecycle(): SlotView {
    return this.#slot;
  }

  get id(): string {
    return this.assignment.id;
  }

  get model(): string {
    return this.assignment.load.modelName;
  }

  get backlog(): number {
    return this.inFlightCount;
  }

  get inFlightCount(): number {
    return this.batches.length;
  }

  get requestsInFlight(): number {
    let n = 0;
    for (const b of this.batches) n += b.jobs.length;
    return n;
  }

  get isIdle(): boolean {
    return this.killedBy === null && this.#slot.idle(this.batches.length);
  }

  get isVacant(): boolean {
    return this.isIdle && this.batches.length === 0;
  }

  get alive(): boolean {
    return this.exitInfo === null;
  }

  listen(listener: WorkerListener): void {
    this.#listener = listener;
  }

  run(msg: InferMessage, jobs: readonly Job[]): void {
    this.batches.push({ msg, jobs });
    if (this.fleet.options.autoAnswer) setImmediate(() => this.batches.includes(this.batches[0]) && this.alive && this.answer());
  }

  holds(job: Job): boolean {
    return this.heldJob(job.id) === job;
  }

  heldJob(id: number): Job | undefined {
    for (const b of this.batches) {
      const job = b.jobs.find((j) => j.id === id);
      if (job) return job;
    }
    return undefined;
  }

  cancel(job: Job): void {
    this.cancelled.push(job.id);
  }

  acknowledge(): void {
    // Fake workers do not stream.
  }

  kill(reason: KillReason): void {
    this.killedBy ??= reason;
    if (this.fleet.options.autoExit && this.alive) setImmediate(() => this.alive && this.exit('SIGKILL'));
  }

  retire(): void {
    this.#slot.retire();
  }

  resize(capacity: number): void {
    this.#slot.resize(capacity);
  }

  async stop(): Promise<WorkerExit> {
    this.retire();
    this.kill('stopped');
    return this.exited;
  }

  async measureMemory(): Promise<number> {
    this.#slot.measured(this.alive ? this.fleet.options.memoryBytes(this.model) : 0);
    return this.#slot.memoryBytes;
  }

  // ---- what the test drives ----

  load(): void {
    if (this.alive) this.#slot.succeed(kLoaded);
  }

  failLoad(err: MmeError): void {
    if (this.#slot.fail(err)) this.kill('stopped');
  }

  /** Answers the oldest batch (or batch `index`): every request 200 with its job id, unless `respond` says otherwise. */
  answer(index = 0, respond: (job: Job) => Partial<WireResponse> = () => ({})): void {
    const [batch] = this.batches.splice(index, 1);
    if (!batch) throw new Error(`worker ${this.id} holds no batch ${index}`);
    const responses = batch.jobs.map((j) => ({ id: j.id, status: 200, contentType: 'application/json', headers: {}, body: Buffer.from(JSON.stringify({ id: j.id })), ...respond(j) }));
    this.#listener?.result(this, batch, { batchId: batch.msg.batchId, modelMicros: 1, runMicros: 1, responses }, true);
  }

  /** The process ends: by the signal the server sent, or on its own. */
  exit(signal: NodeJS.Signals | null = null, code: number | null = signal ? null : 1): void {
    if (!this.alive) return;
    const exit: WorkerExit = { code, signal, reason: exitReason({ code, signal, killedBy: this.killedBy, heapExhausted: false }), causedBy: null };
    this.exitInfo = exit;
    this.#slot.fail(new MmeError(exit.reason === 'oom' ? 'MME_ERR_INSUFFICIENT_MEMORY' : exit.reason === 'stopped' ? 'MME_ERR_SHUTTING_DOWN' : 'MME_ERR_LOAD_FAILED', `fake worker ${this.id} ended while loading (${exit.reason})`));
    this.#slot.exited(exit);
    const batches = this.batches.splice(0);
    const concurrent = this.assignment.load.concurrentBatches;
    this.#resolveExit(exit);
    this.#listener?.exited(this, exit, concurrent ? batches : batches.slice(0, 1), concurrent ? [] : batches.slice(1));
  }
}

/** Every fake worker a server started, for the test to find and drive. */
export class FakeFleet {
  readonly workers: FakeWorker[] = [];
  readonly options: FakeOptions;
  /** The server's clock, which the workers' load timers run on too. */
  readonly clock = new VirtualClock();

  constructor(options: Partial<FakeOptions> = {}) {
    this.options = { autoLoad: true, autoExit: true, autoAnswer: false, memoryBytes: () => 10 * 2 ** 20, startsLeft: Infinity, ...options };
  }

  readonly startWorker = (assignment: Assignment): FakeWorker => {
    if (this.options.startsLeft-- <= 0) throw new MmeError('MME_ERR_NO_WORKER', 'no room to start a worker');
    const w = new FakeWorker(assignment, this);
    this.workers.push(w);
    return w;
  };

  of(model: string): FakeWorker[] {
    return this.workers.filter((w) => w.model === model);
  }

  live(model?: string): FakeWorker[] {
    return this.workers.filter((w) => w.alive && (model === undefined || w.model === model));
  }
}
