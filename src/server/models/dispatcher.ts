/**
 * A model's requests: the bounded queue, batching (MMS's BatchAggregator), the response timeout and
 * cancellation. It hands batches to idle workers and settles each job from what the worker hands
 * back: a result, or its exit with the batches it held. It never reaches into a worker.
 */
import { MmeError } from '../../errors';
import type { Clock, Timer } from '../../util/clock';
import type { ChunkMessage, ResultMessage, InvokeRequest } from '../../protocol/messages';
import { IdAllocator, MAX_WIRE_ID } from '../../protocol/ids';
import { runningRequestError, type WorkerExit } from '../processes/exit-reason';
import type { InFlightBatch, WorkerSlot } from '../processes/worker-slot';
import type { WorkerSet } from '../workers/worker-set';
import { Fifo } from '../../util/fifo';
import { MinHeap } from '../../util/min-heap';
import { Job, type InvokeResult, type JobOptions } from '../jobs/job';
import { JobQueue } from '../jobs/job-queue';
import type { ModelSettings } from './model-settings';

/** Most batch-size-1 requests sent to a worker in one frame when they are already queued. */
export const kCoalesce = 8;
/**
 * With more than one worker, most run time (µs) the requests of one coalesced frame may add up to:
 * the last of them waits for the runs before it, which another worker might have taken. A frame
 * saves a round trip of tens of µs; past about a millisecond of runs it costs the tail more.
 */
const kCoalesceMicros = 1000;

/** Batch ids on the wire: a worker's answers find their batch by it. */
export const batchIds = new IdAllocator(MAX_WIRE_ID);

export interface DispatcherDeps {
  name: string;
  settings(): ModelSettings;
  /** The handler streams: each request runs alone, since its chunks go straight to its client. */
  streaming(): boolean;
  workers: WorkerSet;
  /** The model's handler is a custom one: requests carry their headers to it. */
  withHeaders: boolean;
  log(line: string): void;
  /** What the response timeout and the batch window run on: the server's clock. */
  clock: Clock;
  /** A request left the queue for a worker after `ms` in it (the autoscaler's measure). */
  waited?(ms: number): void;
}

/** Deadline-list length below which settled jobs behind an unsettled head are left for the timer. */
const kPruneAtLeast = 1024;

export class Dispatcher {
  readonly #queue: JobQueue;
  #batchTimer: Timer | null = null;
  /**
   * Every admitted job in admission order. All share the model's response timeout, so deadlines
   * are in the same order: one timer, for the oldest unsettled job, serves them all.
   */
  readonly #deadlines = new Fifo<Job>();
  #pruneAt = kPruneAtLeast;
  #deadlineTimer: Timer | null = null;
  /**
   * Jobs whose caller's deadline comes before the response timeout, soonest first: their deadlines
   * are in no particular order, so they have a heap and a timer of their own, and a request that
   * names no deadline costs what it did before.
   */
  readonly #callerDeadlines = new MinHeap<Job>((a, b) => a.deadline < b.deadline);
  #callerPruneAt = kPruneAtLeast;
  #callerTimer: Timer | null = null;
  #callerTimerAt = 0;
  #batchWindowOver = false;
  #closed: MmeError | null = null;
  /** One request's run time, µs, averaged over the last answers of one (0 = none yet). */
  #runMicros = 0;
  /** Dispatch counters (requests / batches = mean batch size). */
  readonly stats = { requests: 0, batches: 0 };

  constructor(private readonly deps: DispatcherDeps) {
    const settings = deps.settings();
    this.#queue = new JobQueue(settings.jobQueueSize, settings.priorityLevels, settings.priorityAgingMs);
  }

  get queueLength(): number {
    return this.#queue.length;
  }

  /** Requests its workers hold: each process records what it was sent until it is answered. */
  get runningCount(): number {
    let n = 0;
    for (const w of this.deps.workers.workers) n += w.inFlightRequests;
    return n;
  }

  submit(request: InvokeRequest, opts: JobOptions = {}): Promise<InvokeResult> {
    const { name } = this.deps;
    const settings = this.deps.settings();
    if (this.#closed) return Promise.reject(this.#closed);
    if (this.deps.workers.target === 0) return Promise.reject(this.noWorker());
    if (settings.useJobTicket && !this.deps.workers.hasVacant()) {
      return Promise.reject(
        new MmeError(
          'MME_ERR_NO_WORKER',
          `No idle worker for model ${name} and job tickets are on for it (use_job_ticket): retry later, or raise its worker count with PUT /models/${name}?min_worker=N.`,
        ),
      );
    }
    if (this.#queue.isFull) {
      return Promise.reject(
        new MmeError(
          'MME_ERR_QUEUE_FULL',
          `The job queue of model ${name} is full (${settings.jobQueueSize} requests waiting). Retry later, raise job_queue_size (config.properties, or jobQueueSize in the model's model-config.json), or add workers with PUT /models/${name}?min_worker=N.`,
        ),
      );
    }
    const now = this.deps.clock.now();
    // Past its deadline already (an on-demand load took it): answered here, never queued.
    if (opts.deadline !== undefined && opts.deadline <= now) return Promise.reject(this.#pastDeadline(true));
    const job = new Job(request, opts, now);
    job.deadline = now + settings.responseTimeoutMs;
    if (opts.deadline !== undefined && opts.deadline < job.deadline) {
      job.deadline = opts.deadline;
      job.callerDeadline = true;
      this.#callerDeadlines.push(job);
      this.#armCallerDeadline();
    } else {
      this.#deadlines.push(job);
      this.#armDeadline();
    }
    opts.signal?.addEventListener('abort', () => this.#onCancel(job), { once: true });
    this.#queue.push(job);
    this.dispatch();
    return job.promise;
  }

  dispatch(): void {
    while (this.#queue.length > 0 && !this.#closed) {
      const worker = this.deps.workers.pickIdle();
      if (!worker) return;
      const { maxBatchDelayMs, batchSize: configured } = this.deps.settings();
      const streaming = this.deps.streaming();
      const batchSize = streaming ? 1 : configured;
      if (batchSize > 1 && this.#queue.length < batchSize && !this.#batchWindowOver && maxBatchDelayMs > 0) {
        // MMS's pollBatch: with a worker free, wait up to max_batch_delay for the batch to fill.
        this.#batchTimer ??= this.deps.clock.setTimeout(() => {
          this.#batchTimer = null;
          this.#batchWindowOver = true;
          this.dispatch();
        }, maxBatchDelayMs);
        return;
      }
      // With batch_size 1 and a backlog, several requests share one frame and one round trip (run
      // one by one): on this VM each parent⇄worker hop costs more than running a small model. With
      // several workers, only as many as run in about a millisecond (#coalesced).
      const independent = batchSize === 1 && this.#queue.length > 1 && !streaming;
      const now = this.deps.clock.now();
      const jobs = this.#queue.take(independent ? this.#coalesced() : batchSize, now);
      if (jobs.length === 0) break;
      this.#batchWindowOver = false;
      if (this.#batchTimer) {
        this.deps.clock.clearTimeout(this.#batchTimer);
        this.#batchTimer = null;
      }
      for (const job of jobs) {
        job.dispatchedAt = now;
        this.deps.waited?.(now - job.admittedAt);
      }
      this.stats.batches++;
      this.stats.requests += jobs.length;
      try {
        worker.run(
          {
            batchId: batchIds.next(),
            requests: jobs.map((j) => j.request),
            independent: independent && jobs.length > 1,
            withHeaders: this.deps.withHeaders,
          },
          jobs,
        );
      } catch (err) {
        this.#unsent(jobs, err);
      }
    }
  }

  /** How many queued requests share a frame: all kCoalesce with one worker or quick runs, fewer as runs grow. */
  #coalesced(): number {
    if (this.#runMicros === 0 || this.deps.workers.workers.length < 2) return kCoalesce;
    return Math.max(1, Math.min(kCoalesce, Math.floor(kCoalesceMicros / this.#runMicros)));
  }

  /** A worker answered some or (`done`) the rest of a batch. */
  onResult(batch: InFlightBatch, msg: ResultMessage, done: boolean, workerPid?: number): void {
    const size = batch.msg.independent ? 1 : batch.jobs.length;
    // An answer of one request run alone times one run (a refused one, 0 µs, times nothing).
    if (size === 1 && msg.responses.length === 1 && msg.modelMicros > 0)
      this.#runMicros = this.#runMicros === 0 ? msg.modelMicros : 0.8 * this.#runMicros + 0.2 * msg.modelMicros;
    for (const r of msg.responses) {
      const job = batch.jobs.find((j) => j.id === r.id);
      if (!job) continue;
      if (r.error) {
        job.reject(MmeError.fromWire(r.error));
      } else {
        job.resolve({
          status: r.status,
          contentType: r.contentType,
          headers: r.headers,
          body: r.body!,
          modelMicros: msg.modelMicros,
          queueMicros: Math.round((job.dispatchedAt - job.admittedAt) * 1000),
          batchSize: size,
          workerPid,
        });
      }
    }
    // A response the worker did not send back (never expected) must not leave its caller waiting.
    if (!done) return;
    for (const job of batch.jobs) {
      if (!job.settled)
        job.reject(
          new MmeError(
            'MME_ERR_INTERNAL',
            `The worker of model ${this.deps.name} answered a batch without this request.`,
          ),
        );
    }
  }

  onChunk(worker: WorkerSlot, msg: ChunkMessage): void {
    const job = worker.heldJob(msg.id);
    if (!job) return;
    const bytes = msg.body?.length ?? 0;
    if (job.opts.onChunk) job.opts.onChunk(msg, () => worker.acknowledge(job, bytes));
    else worker.acknowledge(job, bytes);
  }

  /**
   * A worker is gone. Its running batches fail with the error its exit reason gives; batches only
   * waiting in its pipe go back to the head of the queue, once — a job put back a second time
   * fails too, so a poison request cannot crash worker after worker.
   */
  onExit(exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void {
    const err = runningRequestError(this.deps.name, exit, this.deps.settings().responseTimeoutMs / 1000);
    for (const batch of running) {
      for (const job of batch.jobs) job.reject(err);
    }
    const requeue: Job[] = [];
    for (const batch of waiting) {
      for (const job of batch.jobs) {
        if (job.settled) continue;
        if (job.requeued || this.#closed) job.reject(this.#closed ?? err);
        else {
          job.requeued = true;
          requeue.push(job);
        }
      }
    }
    if (requeue.length > 0) this.#queue.unshift(requeue);
  }

  /**
   * A batch whose frame could not be written (a bug: nothing a client sends should get here). The
   * worker holds nothing of it, so its jobs fail now rather than wait for a timeout, and the worker
   * serves the next batch.
   */
  #unsent(jobs: readonly Job[], err: unknown): void {
    this.deps.log(
      `[${this.deps.name}] a batch of ${jobs.length} could not be sent to its worker: ${(err as Error)?.stack ?? String(err)}`,
    );
    const error = new MmeError(
      'MME_ERR_INTERNAL',
      `The request to model ${this.deps.name} could not be sent to its worker (a server bug); the server log has the details.`,
    );
    for (const job of jobs) job.reject(error);
  }

  #armDeadline(): void {
    // Settled jobs leave on every admission, not only when the timer fires: through its options each
    // holds its request's context (ServerResponse, IncomingMessage, closures), and kept for the whole
    // response timeout they made every scavenge copy and promote megabytes: the p99.9 stall
    // (docs/performance.md). Those behind an unsettled head go once the list doubles.
    while (this.#deadlines.peek()?.settled) this.#deadlines.shift();
    if (this.#deadlines.length > this.#pruneAt) {
      this.#deadlines.prune((job) => job.settled);
      this.#pruneAt = Math.max(kPruneAtLeast, 2 * this.#deadlines.length);
    }
    if (this.#deadlineTimer) return;
    const head = this.#deadlines.peek();
    if (head)
      this.#deadlineTimer = this.deps.clock.setTimeout(
        () => this.#onDeadline(),
        Math.max(0, head.deadline - this.deps.clock.now()),
      );
  }

  #onDeadline(): void {
    this.#deadlineTimer = null;
    const now = this.deps.clock.now();
    for (let job = this.#deadlines.peek(); job && (job.settled || job.deadline <= now); job = this.#deadlines.peek()) {
      this.#deadlines.shift();
      if (!job.settled) this.#onTimeout(job);
    }
    this.#armDeadline();
  }

  /** As #armDeadline for the caller's deadlines: re-armed when a new one comes before the timer's. */
  #armCallerDeadline(): void {
    const heap = this.#callerDeadlines;
    while (heap.peek()?.settled) heap.pop();
    if (heap.length > this.#callerPruneAt) {
      heap.prune((job) => job.settled);
      this.#callerPruneAt = Math.max(kPruneAtLeast, 2 * heap.length);
    }
    const head = heap.peek();
    if (this.#callerTimer && head && this.#callerTimerAt <= head.deadline) return;
    this.deps.clock.clearTimeout(this.#callerTimer);
    this.#callerTimer = null;
    if (!head) return;
    this.#callerTimerAt = head.deadline;
    this.#callerTimer = this.deps.clock.setTimeout(
      () => this.#onCallerDeadline(),
      Math.max(0, head.deadline - this.deps.clock.now()),
    );
  }

  #onCallerDeadline(): void {
    this.#callerTimer = null;
    const now = this.deps.clock.now();
    const heap = this.#callerDeadlines;
    for (let job = heap.peek(); job && (job.settled || job.deadline <= now); job = heap.peek()) {
      heap.pop();
      if (job.settled) continue;
      if (this.#queue.remove(job)) {
        job.reject(this.#pastDeadline(true));
        continue;
      }
      // Running: its client is answered now, and the worker is told as on a disconnect (its
      // handler sees context.isCancelled); the process lives on, unlike at the response timeout.
      job.reject(this.#pastDeadline(false));
      this.#holder(job)?.cancel(job);
    }
    this.#armCallerDeadline();
  }

  #pastDeadline(queued: boolean): MmeError {
    const { name } = this.deps;
    return new MmeError(
      'MME_ERR_DEADLINE_EXCEEDED',
      queued
        ? `The request's deadline passed before it reached a worker of model ${name}; ask for a longer timeout (X-Request-Timeout, parameters.timeout or the gRPC deadline), add workers or lower the request rate.`
        : `Model ${name} did not answer within the request's deadline; its handler was told to stop. Ask for a longer timeout (X-Request-Timeout, parameters.timeout or the gRPC deadline).`,
    );
  }

  #onTimeout(job: Job): void {
    const seconds = this.deps.settings().responseTimeoutMs / 1000;
    if (this.#queue.remove(job)) {
      job.reject(
        new MmeError(
          'MME_ERR_WORKER_TIMEOUT',
          `Request to model ${this.deps.name} waited ${seconds} s in the queue without reaching a worker (default_response_timeout_seconds); add workers or lower the request rate.`,
        ),
      );
      return;
    }
    job.reject(
      new MmeError(
        'MME_ERR_WORKER_TIMEOUT',
        `Model ${this.deps.name} did not answer within ${seconds} s (default_response_timeout_seconds); its worker was stopped and is being replaced.`,
      ),
    );
    const worker = this.#holder(job);
    if (!worker) return;
    // A run cannot be interrupted from outside the process: kill it. Its exit settles the rest of
    // what it held, and the batches waiting in its pipe run elsewhere.
    this.deps.log(
      `[${this.deps.name}] worker ${worker.id} (pid ${worker.pid}) exceeded the ${seconds} s response timeout; killing it`,
    );
    worker.kill('timeout-kill');
  }

  #onCancel(job: Job): void {
    if (this.#queue.remove(job)) {
      job.reject(
        new MmeError('MME_ERR_CLIENT_CLOSED', 'The client closed the connection before the request reached a worker.'),
      );
      return;
    }
    // Already running: the handler can see it (context.isCancelled) and stop a long stream early.
    this.#holder(job)?.cancel(job);
  }

  #holder(job: Job): WorkerSlot | undefined {
    return this.deps.workers.workers.find((w) => w.holds(job));
  }

  noWorker(): MmeError {
    const { name } = this.deps;
    return new MmeError(
      'MME_ERR_NO_WORKER',
      `Model ${name} has no workers: scale it up with PUT /models/${name}?min_worker=1.`,
    );
  }

  /** Fails every queued job with `err` (the model is marked failed); running ones finish. */
  failQueued(err: MmeError): void {
    for (const job of this.#queue.drainAll()) job.reject(err);
  }

  /** No more work: queued jobs fail with `err`; running ones are settled by their workers' exits. */
  close(err: MmeError): void {
    this.#closed = err;
    this.deps.clock.clearTimeout(this.#batchTimer);
    this.#batchTimer = null;
    this.failQueued(err);
    // Running jobs are settled by their workers' exits; their deadlines need no timer after this.
    this.deps.clock.clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    this.#deadlines.drainAll();
    this.deps.clock.clearTimeout(this.#callerTimer);
    this.#callerTimer = null;
    this.#callerDeadlines.drainAll();
  }
}
