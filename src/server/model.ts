/**
 * One loaded model: its worker processes, its bounded job queue and the dispatcher that forms
 * batches (MMS's Model + WorkLoadManager + BatchAggregator for a single model).
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { MmeError } from '../errors';
import type { ChunkMessage, InferMessage, LoadMessage, ResultMessage, TensorInfo, WireRequest } from '../protocol/frames';
import { restartDelaySeconds } from './workers/backoff';
import { processMemoryBytes } from './workers/process-memory';
import type { Assignment, WorkerExit, WorkerHandle } from './workers/worker-handle';
import { Job, type InvokeResult, type JobOptions } from './job';
import { JobQueue } from './job-queue';

export interface ModelSettings {
  minWorkers: number;
  maxWorkers: number;
  batchSize: number;
  maxBatchDelayMs: number;
  jobQueueSize: number;
  responseTimeoutMs: number;
  loadTimeoutMs: number;
  useJobTicket: boolean;
  /** One process holds the session; minWorkers becomes its number of concurrent batch slots. */
  preloadModel: boolean;
  deviceIds: readonly number[] | null;
}

export type ModelState = 'loading' | 'ready' | 'failed' | 'unloading' | 'unloaded';

export interface ModelDeps {
  /** Everything a worker needs to load this model except its id and GPU. */
  load: Omit<LoadMessage, 'workerId' | 'gpuId' | 'batchSize' | 'concurrentBatches'>;
  maxResponseSize: number;
  assignGpu: () => number;
  /** A started worker process (a warm spare when one is free) given this assignment. */
  startWorker: (assignment: Assignment) => WorkerHandle;
  log: (line: string) => void;
}

/**
 * Batches sent ahead to a busy worker: while it runs one, the next already waits in its pipe, so
 * it never idles for a parent round trip (3.4× the throughput of one-at-a-time on a tiny model).
 */
const kPipelineDepth = 2;
/** Most batch-size-1 requests sent to a worker in one frame when they are already queued. */
const kCoalesce = 8;
/** Consecutive failed restarts, with no worker ready, after which the model is marked failed. */
const kFailedAfter = 3;
/**
 * A restart has worked once its worker has stayed up this long after loading: one that loads and
 * dies at once is a crash loop, and backs off like one that cannot load at all.
 */
const kStableMs = 10_000;
const kBackoffCapSeconds = 60;

let nextBatchId = 1;

export class Model extends EventEmitter {
  state: ModelState = 'loading';
  readonly workers: WorkerHandle[] = [];
  readonly loadedAt = new Date();
  inputs: TensorInfo[] = [];
  outputs: TensorInfo[] = [];
  /** The handler streams: each request runs alone, since its chunks go straight to its client. */
  streaming = false;
  memoryBytes = 0;
  memoryMeasuredAt = 0;
  /** Date.now() of the last admitted request (or of the load): the idle age eviction reports. */
  lastUsedAt = Date.now();
  lastError: MmeError | null = null;
  /** Dispatch counters (requests / batches = mean batch size). */
  readonly stats = { requests: 0, batches: 0 };

  readonly #queue: JobQueue;
  readonly #running = new Map<number, Job>();
  #workerSeq = 0;
  #restartAttempt = 0;
  #restartTimer: NodeJS.Timeout | null = null;
  /** Replacement workers not yet stable (kStableMs after loading): their death is a failed restart. */
  readonly #onProbation = new Set<WorkerHandle>();
  #batchTimer: NodeJS.Timeout | null = null;
  #batchWindowOver = false;
  #rr = 0;
  #idleWaiters: Array<() => void> = [];

  constructor(readonly name: string, readonly url: string, public settings: ModelSettings, private readonly deps: ModelDeps) {
    super();
    this.#queue = new JobQueue(settings.jobQueueSize);
  }

  get queueLength(): number {
    return this.#queue.length;
  }

  get inFlightCount(): number {
    return this.#running.size;
  }

  get busy(): boolean {
    return this.#queue.length > 0 || this.#running.size > 0;
  }

  /** Starts minWorkers workers and resolves when all have loaded; on any failure stops them all. */
  async start(): Promise<void> {
    const started = Array.from({ length: this.#processCount() }, () => this.#spawnWorker());
    const results = await Promise.allSettled(started.map((w) => w.ready));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) {
      await this.stop(0);
      throw failure.reason as MmeError;
    }
    this.state = 'ready';
    await this.refreshMemory();
  }

  submit(request: WireRequest, opts: JobOptions = {}): Promise<InvokeResult> {
    if (this.state === 'failed') {
      return Promise.reject(new MmeError('MME_ERR_MODEL_FAILED', `Model ${this.name} has no working worker: ${this.lastError?.message ?? 'its workers keep failing'}. Unload and load it again once the cause is fixed.`));
    }
    if (this.state !== 'ready') return Promise.reject(new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${this.name}`));
    if (this.workers.length === 0 && !this.#restartTimer) {
      return Promise.reject(new MmeError('MME_ERR_NO_WORKER', `Model ${this.name} has no workers: scale it up with PUT /models/${this.name}?min_worker=1.`));
    }
    if (this.settings.useJobTicket && !this.workers.some((w) => w.isVacant)) {
      return Promise.reject(new MmeError('MME_ERR_NO_WORKER', `No idle worker for model ${this.name} and job tickets are on for it (use_job_ticket): retry later, or raise its worker count with PUT /models/${this.name}?min_worker=N.`));
    }
    if (this.#queue.isFull) {
      return Promise.reject(new MmeError('MME_ERR_QUEUE_FULL', `The job queue of model ${this.name} is full (${this.settings.jobQueueSize} requests waiting). Retry later, raise job_queue_size (config.properties, or jobQueueSize in the model's model-config.json), or add workers with PUT /models/${this.name}?min_worker=N.`));
    }
    this.lastUsedAt = Date.now();
    const job = new Job(request, opts);
    job.timer = setTimeout(() => this.#onTimeout(job), this.settings.responseTimeoutMs);
    opts.signal?.addEventListener('abort', () => this.#onCancel(job), { once: true });
    this.#queue.push(job);
    this.#dispatch();
    return job.promise;
  }

  /** preload_model shares one session between all slots: one process instead of minWorkers. */
  #processCount(): number {
    return this.settings.preloadModel ? Math.min(1, this.settings.minWorkers) : this.settings.minWorkers;
  }

  #spawnWorker(): WorkerHandle {
    const id = `${this.name}-w${++this.#workerSeq}`;
    const worker = this.deps.startWorker({
      id,
      load: { ...this.deps.load, workerId: id, gpuId: this.deps.assignGpu(), batchSize: this.settings.batchSize, concurrentBatches: this.settings.preloadModel },
      loadTimeoutMs: this.settings.loadTimeoutMs,
      maxFrameBytes: this.deps.maxResponseSize * Math.max(1, this.settings.batchSize) + (1 << 20),
    });
    worker.capacity = this.settings.preloadModel ? this.settings.minWorkers : kPipelineDepth;
    this.workers.push(worker);
    worker.on('result', (msg: ResultMessage, batch: InferMessage) => this.#onResult(msg, batch));
    worker.on('chunk', (msg: ChunkMessage) => this.#running.get(msg.id)?.opts.onChunk?.(msg));
    worker.on('exit', (exit: WorkerExit, expected: boolean) => this.#onWorkerExit(worker, exit, expected));
    worker.ready.then(
      (loaded) => {
        this.inputs = loaded.inputs;
        this.outputs = loaded.outputs;
        this.streaming = loaded.streaming;
        if (this.#onProbation.has(worker)) {
          setTimeout(() => {
            if (this.#onProbation.delete(worker)) this.#restartAttempt = 0;
          }, kStableMs).unref();
        }
        if (this.state === 'failed') this.state = 'ready';
        this.emit('worker-ready', worker);
        this.#dispatch();
      },
      (err: MmeError) => {
        this.lastError = err;
      },
    );
    return worker;
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const worker = this.#pickIdleWorker();
      if (!worker) return;
      const { maxBatchDelayMs } = this.settings;
      const batchSize = this.streaming ? 1 : this.settings.batchSize;
      if (batchSize > 1 && this.#queue.length < batchSize && !this.#batchWindowOver && maxBatchDelayMs > 0) {
        // MMS's pollBatch: with a worker free, wait up to max_batch_delay for the batch to fill.
        this.#batchTimer ??= setTimeout(() => {
          this.#batchTimer = null;
          this.#batchWindowOver = true;
          this.#dispatch();
        }, maxBatchDelayMs);
        return;
      }
      // With batch_size 1 and a backlog, several requests share one frame and one round trip (run
      // one by one): on this VM each parent⇄worker hop costs more than running a small model.
      const independent = batchSize === 1 && this.#queue.length > 1 && !this.streaming;
      const jobs = this.#queue.take(independent ? kCoalesce : batchSize);
      if (jobs.length === 0) break;
      this.#batchWindowOver = false;
      if (this.#batchTimer) {
        clearTimeout(this.#batchTimer);
        this.#batchTimer = null;
      }
      const now = performance.now();
      for (const job of jobs) {
        job.dispatchedAt = now;
        this.#running.set(job.id, job);
      }
      this.stats.batches++;
      this.stats.requests += jobs.length;
      worker.run({ batchId: nextBatchId++, requests: jobs.map((j) => j.request), ...(independent && jobs.length > 1 ? { independent: true } : {}) });
    }
    this.#notifyIdle();
  }

  /** The ready worker with the fewest batches in flight (rotating among ties), or null if all are full. */
  #pickIdleWorker(): WorkerHandle | null {
    const n = this.workers.length;
    let best: WorkerHandle | null = null;
    let bestK = 0;
    for (let k = 0; k < n; k++) {
      const w = this.workers[(this.#rr + k) % n];
      if (w.isIdle && (!best || w.inFlight.size < best.inFlight.size)) {
        best = w;
        bestK = k;
        if (w.inFlight.size === 0) break;
      }
    }
    if (best) this.#rr = (this.#rr + bestK + 1) % n;
    return best;
  }

  #onResult(msg: ResultMessage, batch: InferMessage): void {
    const size = batch.independent ? 1 : batch.requests.length;
    for (const r of msg.responses) {
      const job = this.#running.get(r.id);
      if (!job) continue;
      this.#running.delete(r.id);
      if (r.error) {
        job.reject(MmeError.fromWire(r.error));
      } else if (r.body!.length > this.deps.maxResponseSize) {
        job.reject(new MmeError('MME_ERR_RESPONSE_TOO_LARGE', `The response of model ${this.name} is ${r.body!.length} bytes, over max_response_size (${this.deps.maxResponseSize}); raise max_response_size or return less data.`));
      } else {
        job.resolve({
          status: r.status,
          contentType: r.contentType,
          headers: r.headers,
          body: r.body!,
          modelMicros: msg.modelMicros,
          queueMicros: Math.round((job.dispatchedAt - job.admittedAt) * 1000),
          batchSize: size,
        });
      }
    }
    this.#dispatch();
  }

  #onTimeout(job: Job): void {
    const seconds = this.settings.responseTimeoutMs / 1000;
    if (this.#queue.remove(job)) {
      job.reject(new MmeError('MME_ERR_WORKER_TIMEOUT', `Request to model ${this.name} waited ${seconds} s in the queue without reaching a worker (default_response_timeout_seconds); add workers or lower the request rate.`));
      this.#notifyIdle();
      return;
    }
    for (const worker of this.workers) {
      const batch = [...worker.inFlight.values()].find((b) => b.requests.some((r) => r.id === job.id));
      if (!batch) continue;
      // A run cannot be interrupted from outside the process: kill it, fail its batch, replace it.
      this.deps.log(`[${this.name}] worker ${worker.id} (pid ${worker.pid}) exceeded the ${seconds} s response timeout; killing it`);
      // Kill first: settling re-dispatches the batches waiting in its pipe, never back to this worker.
      worker.kill();
      this.#settleInFlight(worker, new MmeError('MME_ERR_WORKER_TIMEOUT', `Model ${this.name} did not answer within ${seconds} s (default_response_timeout_seconds); its worker was stopped and is being replaced.`), batch.batchId);
      return;
    }
  }

  #onCancel(job: Job): void {
    if (this.#queue.remove(job)) {
      job.reject(new MmeError('MME_ERR_BAD_REQUEST', 'client closed the connection'));
      this.#notifyIdle();
      return;
    }
    // Already running: the handler can see it (context.isCancelled) and stop a long stream early.
    const worker = this.workers.find((w) => [...w.inFlight.values()].some((b) => b.requests.some((r) => r.id === job.id)));
    worker?.cancel(job.id);
  }

  /**
   * A worker is gone (or about to be killed). The batches it was running fail with `err`; batches
   * that were only waiting in its pipe go back to the head of the queue, once — a job pushed back
   * a second time fails too, so a poison request cannot crash worker after worker.
   */
  #settleInFlight(worker: WorkerHandle, err: MmeError, runningBatchId?: number): void {
    const batches = [...worker.inFlight.values()];
    // A pipelined worker runs its batches in order, so only the oldest was running; a
    // preload_model process runs all of its slots at once.
    const running = new Set(this.settings.preloadModel ? batches.map((b) => b.batchId) : [runningBatchId ?? batches[0]?.batchId]);
    const requeue: Job[] = [];
    for (const batch of batches) {
      for (const r of batch.requests) {
        const job = this.#running.get(r.id);
        if (!job) continue;
        this.#running.delete(r.id);
        if (running.has(batch.batchId) || job.requeued) job.reject(err);
        else {
          job.requeued = true;
          requeue.push(job);
        }
      }
    }
    worker.inFlight.clear();
    if (requeue.length > 0) {
      this.#queue.unshift(requeue);
      this.#dispatch();
    }
  }

  #onWorkerExit(worker: WorkerHandle, exit: WorkerExit, expected: boolean): void {
    const i = this.workers.indexOf(worker);
    if (i >= 0) this.workers.splice(i, 1);
    const onProbation = this.#onProbation.delete(worker);
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    if (worker.inFlight.size > 0 && expected) {
      // We stopped it (unload, eviction, scale-down, shutdown past its drain bound): not the OOM killer.
      this.#settleInFlight(worker, new MmeError('MME_ERR_SHUTTING_DOWN', `The worker of model ${this.name} was stopped (unload, eviction, scale-down or server shutdown) before this request finished.`));
    } else if (worker.inFlight.size > 0) {
      this.#settleInFlight(worker, exit.outOfMemory
        ? new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `The worker of model ${this.name} ${how} while running this request (out of memory: the kernel's OOM killer, or an exhausted JavaScript heap).`)
        : new MmeError('MME_ERR_WORKER_DIED', `The worker of model ${this.name} ${how} while running this request.`));
    }
    if (expected || this.state === 'unloading' || this.state === 'unloaded' || this.state === 'loading') {
      this.#notifyIdle();
      return;
    }
    this.deps.log(`[${this.name}] worker ${worker.id} (pid ${worker.pid}) ${how}; restarting`);
    if (onProbation) this.#restartFailed(worker, how);
    this.#scheduleRestart();
  }

  /** A replacement died before it was stable: back off further, and after kFailedAfter mark the model failed. */
  #restartFailed(worker: WorkerHandle, how: string): void {
    this.#restartAttempt++;
    const err = worker.loadError ?? new MmeError('MME_ERR_WORKER_DIED', `worker ${worker.id} ${how} right after loading`);
    this.deps.log(`[${this.name}] replacement worker ${worker.loadError ? 'failed to load' : 'died'} (attempt ${this.#restartAttempt}): ${err.message}`);
    if (this.#restartAttempt >= kFailedAfter && !this.workers.some((w) => w.state === 'ready')) this.#markFailed(err);
  }

  #scheduleRestart(): void {
    if (this.#restartTimer || this.workers.length >= this.#processCount()) return;
    const delay = restartDelaySeconds(this.#restartAttempt, kBackoffCapSeconds);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = null;
      if (this.state !== 'ready' && this.state !== 'failed') return;
      this.#onProbation.add(this.#spawnWorker());
      this.emit('worker-restart');
      this.#scheduleRestart();
    }, delay * 1000);
  }

  #markFailed(err: MmeError): void {
    this.state = 'failed';
    this.lastError = err;
    const failure = new MmeError('MME_ERR_MODEL_FAILED', `Model ${this.name} has no working worker: ${err.message}`);
    for (const job of this.#queue.drainAll()) job.reject(failure);
    this.#notifyIdle();
  }

  /** Resolves when nothing is queued or running, or after `boundMs`. */
  async drain(boundMs: number): Promise<boolean> {
    if (!this.busy) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), boundMs);
      this.#idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  #notifyIdle(): void {
    if (this.busy || this.#idleWaiters.length === 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Stops every worker and waits until each process has exited; unfinished jobs are failed. */
  async stop(drainMs: number): Promise<void> {
    if (drainMs > 0 && this.state === 'ready') await this.drain(drainMs);
    this.state = 'unloading';
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    if (this.#batchTimer) clearTimeout(this.#batchTimer);
    await Promise.all(this.workers.slice().map((w) => w.stop()));
    const gone = new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model ${this.name} was unloaded before this request finished.`);
    for (const job of [...this.#queue.drainAll(), ...this.#running.values()]) job.reject(gone);
    this.#running.clear();
    this.state = 'unloaded';
    this.#notifyIdle();
  }

  /** MMS scale API: run `min` workers (max is recorded; workers are not autoscaled). */
  async scale(min: number, max: number, synchronous: boolean): Promise<void> {
    this.settings = { ...this.settings, minWorkers: min, maxWorkers: max };
    const live = this.workers.filter((w) => w.state !== 'stopping');
    if (this.settings.preloadModel) for (const w of live) w.capacity = min;
    const target = this.#processCount();
    const added: WorkerHandle[] = [];
    for (let n = live.length; n < target; n++) added.push(this.#spawnWorker());
    const extra = live.length - target;
    if (extra > 0) {
      // Workers still loading go first, then idle ones; a busy one finishes its batch (its results are
      // still delivered) then exits.
      const rank = (w: WorkerHandle) => (w.state !== 'ready' ? 0 : w.isVacant ? 1 : 2);
      const victims = [...live].sort((a, b) => rank(a) - rank(b)).slice(0, extra);
      const stopping = victims.map((w) => this.#retire(w));
      if (synchronous) await Promise.all(stopping);
    }
    this.#dispatch();
    if (synchronous) {
      const results = await Promise.allSettled(added.map((w) => w.ready));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason as MmeError;
      await this.refreshMemory();
    }
  }

  async #retire(worker: WorkerHandle): Promise<void> {
    worker.retire();
    if (worker.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        const check = () => {
          if (worker.inFlight.size === 0) {
            worker.off('result', check);
            worker.off('exit', check);
            resolve();
          }
        };
        worker.on('result', check);
        worker.on('exit', check);
        check();
      });
    }
    await worker.stop();
  }

  async refreshMemory(): Promise<number> {
    const sizes = await Promise.all(this.workers.map(async (w) => [w, await processMemoryBytes(w.pid)] as const));
    for (const [w, bytes] of sizes) w.memoryBytes = bytes;
    this.memoryBytes = sizes.reduce((s, [, b]) => s + b, 0);
    this.memoryMeasuredAt = Date.now();
    return this.memoryBytes;
  }
}
