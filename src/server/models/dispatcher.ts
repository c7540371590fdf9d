/**
 * A model's requests: the bounded queue, batching (MMS's BatchAggregator), the response timeout and
 * cancellation. It hands batches to idle workers and settles each job from what the worker hands
 * back: a result, or its exit with the batches it held (it listens to its workers, then the worker
 * set it extends hears of the exit). It never reaches into a worker.
 */
import { MmeError, type ErrorCode } from '../../errors';
import type { Timer } from '../../util/clock';
import { DeadlineList } from '../../util/deadline-list';
import type { ResultMessage, InvokeRequest } from '../../protocol/messages';
import { IdAllocator, MAX_WIRE_ID } from '../../protocol/ids';
import { runningRequestError, type WorkerExit } from '../processes/exit-reason';
import type { InFlightBatch } from '../hosts/batches-in-flight';
import type { ModelSlot, WorkerListener } from '../hosts/model-slot';
import { WorkerSet, type WorkerSetDeps } from '../workers/worker-set';
import { Job, type InvokeResult, type JobOptions } from '../jobs/job';
import { JobQueue } from '../jobs/job-queue';
import { processCount, type ModelSettings } from './model-settings';

/** Most batch-size-1 requests sent to a worker in one frame when they are already queued. */
export const kCoalesce = 8;
/** With several workers, most run time (µs) a coalesced frame may add up to: past it the tail costs more than the round trip saved. */
const kCoalesceMicros = 1000;

type StopReason = 'timeout' | 'deadline' | 'cancel';

export const batchIds = new IdAllocator(MAX_WIRE_ID);

const refuse = (code: ErrorCode, message: string) => Promise.reject(new MmeError(code, message));

export abstract class Dispatcher extends WorkerSet implements WorkerListener {
  /** Each request of a streaming handler runs alone: its chunks go straight to its client. */
  streaming = false;
  readonly #queue: JobQueue;
  #batchTimer: Timer | null = null;
  /** Jobs that keep the response timeout, in admission order; and those whose caller's deadline comes first. */
  readonly #deadlines: DeadlineList<Job>;
  readonly #callerDeadlines: DeadlineList<Job>;
  #batchWindowOver = false;
  #closed: MmeError | null = null;
  /** One request's run time, µs, averaged over the last answers of one (0 = none yet). */
  #runMicros = 0;
  readonly stats = { requests: 0, batches: 0 };

  /** `withHeaders`: a custom handler gets the requests' headers. */
  constructor(
    name: string,
    deps: WorkerSetDeps,
    public settings: ModelSettings,
    private readonly withHeaders: boolean,
  ) {
    super(name, deps, processCount(settings));
    this.#queue = new JobQueue(settings.jobQueueSize, settings.priorityLevels, settings.priorityAgingMs);
    this.#deadlines = DeadlineList.inOrder(deps.clock, (job) => this.#stop(job, 'timeout'));
    this.#callerDeadlines = DeadlineList.anyOrder(deps.clock, (job) => this.#stop(job, 'deadline'));
  }

  /** A request left the queue after `ms` in it (the autoscaler's measure). */
  protected abstract waited(ms: number): void;
  /** With no worker, its queue still takes requests: autoscale starts a worker when it sees them. */
  protected abstract get scalesFromZero(): boolean;

  get queueLength(): number {
    return this.#queue.length;
  }

  submit(request: InvokeRequest, opts: JobOptions = {}): Promise<InvokeResult> {
    const { name, settings } = this;
    if (this.#closed) return Promise.reject(this.#closed);
    if (this.workerTarget === 0 && !this.scalesFromZero) return Promise.reject(this.noWorker());
    if (settings.useJobTicket && !this.workers.some((w) => w.isVacant))
      return refuse(
        'MME_ERR_NO_WORKER',
        `No idle worker for model ${name} and job tickets are on for it (use_job_ticket): retry later, or raise its worker count with PUT /models/${name}?min_worker=N.`,
      );
    if (this.#queue.isFull)
      return refuse(
        'MME_ERR_QUEUE_FULL',
        `The job queue of model ${name} is full (${settings.jobQueueSize} requests waiting). Retry later, raise job_queue_size (config.properties, or jobQueueSize in the model's model-config.json), or add workers with PUT /models/${name}?min_worker=N.`,
      );
    const now = this.deps.clock.now();
    // Past its deadline already (an on-demand load took it): answered here, never queued.
    if (opts.deadline !== undefined && opts.deadline <= now) return Promise.reject(this.#stopError('deadline', true));
    const job = new Job(request, opts, now, now + settings.responseTimeoutMs);
    (job.callerDeadline ? this.#callerDeadlines : this.#deadlines).add(job);
    if (opts.signal) opts.signal.onabort = () => this.#stop(job, 'cancel');
    this.#queue.push(job);
    this.dispatch();
    return job.promise;
  }

  dispatch(): void {
    while (this.#queue.length > 0 && !this.#closed) {
      const worker = this.pickIdle();
      if (!worker) return;
      const { maxBatchDelayMs } = this.settings;
      const batchSize = this.streaming ? 1 : this.settings.batchSize;
      if (batchSize > 1 && this.#queue.length < batchSize && !this.#batchWindowOver && maxBatchDelayMs > 0) {
        // MMS's pollBatch: with a worker free, wait up to max_batch_delay for the batch to fill.
        this.#batchTimer ??= this.deps.clock.setTimeout(() => {
          this.#batchTimer = null;
          this.#batchWindowOver = true;
          this.dispatch();
        }, maxBatchDelayMs);
        return;
      }
      // With batch_size 1 and a backlog, several requests share one frame and round trip (run one by
      // one): each parent⇄worker hop costs more than running a small model.
      const independent = batchSize === 1 && this.#queue.length > 1 && !this.streaming;
      const now = this.deps.clock.now();
      const jobs = this.#queue.take(independent ? this.#coalesced() : batchSize, now);
      if (jobs.length === 0) break;
      this.#batchWindowOver = false;
      this.deps.clock.clearTimeout(this.#batchTimer);
      this.#batchTimer = null;
      for (const job of jobs) {
        job.dispatchedAt = now;
        this.waited(now - job.admittedAt);
      }
      this.stats.batches++;
      this.stats.requests += jobs.length;
      try {
        worker.run(
          {
            batchId: batchIds.next(),
            requests: jobs.map((j) => j.request),
            independent: independent && jobs.length > 1,
            withHeaders: this.withHeaders,
          },
          jobs,
        );
      } catch (err) {
        this.#unsent(jobs, err);
      }
    }
  }

  /** How many queued requests share a frame: kCoalesce with one worker or quick runs, fewer as runs grow. */
  #coalesced(): number {
    if (this.#runMicros === 0 || this.workers.length < 2) return kCoalesce;
    return Math.max(1, Math.min(kCoalesce, Math.floor(kCoalesceMicros / this.#runMicros)));
  }

  onResult(worker: ModelSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
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
          workerPid: worker.pid,
        });
      }
    }
    // A response the worker did not send back (never expected) must not leave its caller waiting.
    if (done) {
      const missing = `The worker of model ${this.name} answered a batch without this request.`;
      for (const job of batch.jobs) if (!job.settled) job.reject(new MmeError('MME_ERR_INTERNAL', missing));
    }
    this.stopIfDone(worker);
    this.dispatch();
  }

  /**
   * Running batches fail; waiting ones go back to the queue's head once, so a poison request cannot
   * crash worker after worker (one whose client left fails now: nothing would take it off the queue).
   */
  onExit(worker: ModelSlot, exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void {
    const err = runningRequestError(this.name, exit, this.settings.responseTimeoutMs / 1000);
    for (const batch of running) for (const job of batch.jobs) job.reject(err);
    const requeue: Job[] = [];
    for (const job of waiting.flatMap((batch) => batch.jobs)) {
      if (job.settled) continue;
      if (job.requeued || this.#closed || job.opts.signal?.aborted) job.reject(this.#closed ?? err);
      else {
        job.requeued = true;
        requeue.push(job);
      }
    }
    if (requeue.length > 0) this.#queue.unshift(requeue);
    this.workerExited(worker, exit);
    this.dispatch();
  }

  /** A frame that could not be written (a bug): the worker holds nothing of it, so its jobs fail now. */
  #unsent(jobs: readonly Job[], err: unknown): void {
    this.deps.log(
      `[${this.name}] a batch of ${jobs.length} could not be sent to its worker: ${(err as Error)?.stack ?? String(err)}`,
    );
    const error = `The request to model ${this.name} could not be sent to its worker (a server bug); the server log has the details.`;
    for (const job of jobs) job.reject(new MmeError('MME_ERR_INTERNAL', error));
  }

  /**
   * `job` ends before its answer; a running one's worker is told: a cancel its handler sees, or at
   * the response timeout a kill, since a run cannot be interrupted from outside the process.
   */
  #stop(job: Job, why: StopReason): void {
    const queued = this.#queue.remove(job);
    if (queued || why !== 'cancel') job.reject(this.#stopError(why, queued));
    const worker = queued ? undefined : this.workers.find((w) => w.host.batches.jobOf(w, job.id) === job);
    if (!worker) return;
    if (why !== 'timeout') return worker.cancel(job);
    this.deps.log(
      `[${this.name}] worker ${worker.id} (pid ${worker.pid}) exceeded the ${this.settings.responseTimeoutMs / 1000} s response timeout; killing it`,
    );
    worker.kill('timeout-kill');
  }

  #stopError(why: StopReason, queued: boolean): MmeError {
    const { name } = this;
    if (why === 'cancel')
      return new MmeError(
        'MME_ERR_CLIENT_CLOSED',
        'The client closed the connection before the request reached a worker.',
      );
    if (why === 'deadline') {
      const timeouts = '(X-Request-Timeout, parameters.timeout or the gRPC deadline)';
      return new MmeError(
        'MME_ERR_DEADLINE_EXCEEDED',
        queued
          ? `The request's deadline passed before it reached a worker of model ${name}; ask for a longer timeout ${timeouts}, add workers or lower the request rate.`
          : `Model ${name} did not answer within the request's deadline; its handler was told to stop. Ask for a longer timeout ${timeouts}.`,
      );
    }
    const seconds = this.settings.responseTimeoutMs / 1000;
    if (!queued)
      return runningRequestError(name, { code: null, signal: null, reason: 'timeout-kill', causedBy: null }, seconds);
    return new MmeError(
      'MME_ERR_WORKER_TIMEOUT',
      `Request to model ${name} waited ${seconds} s in the queue without reaching a worker (default_response_timeout_seconds); add workers or lower the request rate.`,
    );
  }

  noWorker(): MmeError {
    const { name } = this;
    return new MmeError(
      'MME_ERR_NO_WORKER',
      `Model ${name} has no workers: scale it up with PUT /models/${name}?min_worker=1.`,
    );
  }

  /** Running jobs finish. */
  failQueued(err: MmeError): void {
    for (const job of this.#queue.drainAll()) job.reject(err);
  }

  /** No more work: queued jobs fail with `err`; running ones are settled by their workers' exits. */
  async stop(err: MmeError): Promise<void> {
    this.#closed = err;
    this.deps.clock.clearTimeout(this.#batchTimer);
    this.#batchTimer = null;
    this.failQueued(err);
    this.#deadlines.close();
    this.#callerDeadlines.close();
    await this.stopWorkers();
  }
}
