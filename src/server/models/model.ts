/**
 * One loaded model: its worker set and its dispatcher, wired together as its workers' listener (an
 * exit goes to the dispatcher to settle what the worker held, then to the worker set).
 */
import { MmeError } from '../../errors';
import type { ResultMessage, InvokeRequest } from '../../protocol/messages';
import type { TensorInfo } from '../../model-types';
import type { WorkerExit } from '../processes/exit-reason';
import type { InFlightBatch } from '../hosts/batches-in-flight';
import type { ModelSlot as WorkerSlot, WorkerListener } from '../hosts/model-slot';
import { kModeTraits } from '../hosts/host-policy';
import type { ModelArtifact } from '../../artifacts/model-artifact';
import type { ServerConfig, WorkerMode } from '../../config/types';
import type { WorkerFactory } from '../workers/worker-factory';
import type { LifecycleEvents } from './lifecycle-events';
import { Autoscaler, type ModelLoad } from '../autoscale/autoscaler';
import { limitBytes, type ProcessLimits, workersWithinCpuLimit } from '../processes/process-limits';
import { WorkerSet } from '../workers/worker-set';
import { Dispatcher, kCoalesce } from './dispatcher';
import type { InvokeResult, JobOptions } from '../jobs/job';
import { processCount, resolveHandlerPath, type ModelSettings } from './model-settings';

/** Its registration: the load it was built from, and the lifecycle it reports its workers' health to. */
export interface ModelHealth {
  readonly name: string;
  readonly url: string;
  readonly failed: boolean;
  readonly lastError: MmeError | null;
  markFailed(err: MmeError): void;
  markRecovered(): void;
  memoryChanged?(): void;
}

/** The server's parts a model's workers use. */
export interface ModelContext {
  config: ServerConfig;
  workers: WorkerFactory;
  events: LifecycleEvents;
  log: (line: string) => void;
}

/**
 * Batches sent ahead to a busy worker: while it runs one, the next already waits in its pipe, so
 * it never idles for a parent round trip (3.4× the throughput of one-at-a-time on a tiny model).
 */
const kPipelineDepth = 2;
/** Room in a Result frame beyond its bodies: headers, status lines, error messages. */
const kFrameOverhead = 1 << 20;

export class Model implements WorkerListener {
  inputs: TensorInfo[] = [];
  outputs: TensorInfo[] = [];
  streaming = false;
  memoryBytes = 0;
  memoryMeasuredAt = 0;
  /** null: autoscale off, or workers it cannot add one by one (one preload_model process). */
  readonly autoscaler: Autoscaler | null;
  readonly name: string;
  readonly url: string;
  readonly #set: WorkerSet;
  readonly #dispatcher: Dispatcher;
  readonly #handlerPath: string | null;
  /** A shared model promoted by autoscale runs in processes of its own, on CPU as its host did. */
  readonly #assignGpu: () => number;
  /** Its memory_limit_mb and cpu_limit as its processes join them (null: none). */
  readonly #limits: ProcessLimits | null;
  #workerSeq = 0;
  /** Where new workers start: its worker_mode, or (a promoted shared model) processes of its own. */
  #mode: WorkerMode;
  /** While it moves: the workers started in the new place. */
  #arrived: Set<WorkerSlot> | null = null;
  /** Its session runs' time so far over every worker it has had (in a process of its own: its handler's time), µs. */
  #ranMicros = 0;

  constructor(
    private readonly health: ModelHealth,
    public settings: ModelSettings,
    private readonly artifact: ModelArtifact,
    private readonly ctx: ModelContext,
  ) {
    const { config, workers, events, log } = ctx;
    const { clock } = workers;
    const { name } = health;
    this.name = name;
    this.url = health.url;
    this.#handlerPath = resolveHandlerPath(artifact, config);
    this.#assignGpu = workers.places[settings.workerMode].gpuFor(name, settings.deviceIds);
    // Throws where its limits cannot be held (cpu_limit without cgroups): before any worker starts.
    this.#limits = workers.limits.forModel(name, settings);
    this.#mode = settings.workerMode;
    this.autoscaler =
      config.autoscale && !settings.preloadModel
        ? new Autoscaler(config.autoscale, clock, config.sharedHostHeavyShare, settings.workerMode)
        : null;
    this.#set = new WorkerSet(processCount(settings), {
      name,
      spawn: () => this.#spawn(),
      log,
      onLoaded: (_worker, loaded) => {
        this.inputs = loaded.inputs;
        this.outputs = loaded.outputs;
        this.streaming = loaded.streaming;
        this.#dispatcher.dispatch();
      },
      onRestarted: () => events.sink.workerRestarted?.(name),
      onFailed: (err) => {
        health.markFailed(err);
        this.#dispatcher.failQueued(this.#failedError());
      },
      onRecovered: () => health.markRecovered(),
      waitForRoom: workers.places[settings.workerMode].waitForRoom,
      clock,
    });
    this.#dispatcher = new Dispatcher({
      name,
      settings: () => this.settings,
      streaming: () => this.streaming,
      workers: this.#set,
      withHeaders: this.#handlerPath !== null,
      log,
      clock,
      waited: this.autoscaler ? (ms) => this.#waited(ms) : undefined,
      scalesFromZero: () => this.#scalesFromZero,
    });
  }

  get workers(): readonly WorkerSlot[] {
    return this.#set.workers;
  }

  get queueLength(): number {
    return this.#dispatcher.queueLength;
  }

  /** The worker count it runs toward (min_worker, or what autoscale set since). */
  get workerTarget(): number {
    return this.#set.target;
  }

  /** A process of its own's PSS moves with its use; a model in a shared host costs what its load measured, for good. */
  get memoryMoves(): boolean {
    return kModeTraits[this.#mode].ownProcess;
  }

  /** Where its workers run now (a shared model's are in processes of their own while it is promoted). */
  get mode(): WorkerMode {
    return this.#mode;
  }

  get load(): ModelLoad {
    const { minWorkers, maxWorkers, workerMode } = this.settings;
    return {
      workers: this.#set.target,
      min: minWorkers,
      max: workersWithinCpuLimit(maxWorkers, this.settings.cpuLimit),
      queued: this.queueLength,
      mode: this.#mode,
      home: workerMode,
      ranMicros: this.#ranMicros,
      completed: this.stats.requests - this.inFlightRequests,
      moving: this.#arrived !== null,
    };
  }

  get inFlightRequests(): number {
    let n = 0;
    for (const w of this.#set.workers) n += w.host.batches.requestsOf(w);
    return n;
  }

  get stats(): { requests: number; batches: number } {
    return this.#dispatcher.stats;
  }

  /** Starts the workers and resolves when all have loaded; rejects on the first failure or on `abort`. */
  async start(abort: AbortSignal): Promise<void> {
    await this.#set.start(abort);
    await this.refreshMemory();
  }

  submit(request: InvokeRequest, opts?: JobOptions): Promise<InvokeResult> {
    // Its client left while it waited (for an on-demand load): it is answered here, never queued.
    if (opts?.signal?.aborted)
      return Promise.reject(
        new MmeError(
          'MME_ERR_CLIENT_CLOSED',
          'The client closed the connection while the request waited for the model; it was not run.',
        ),
      );
    if (this.health.failed) return Promise.reject(this.#failedError());
    return this.#dispatcher.submit(request, opts);
  }

  #failedError(): MmeError {
    return new MmeError(
      'MME_ERR_MODEL_FAILED',
      `Model ${this.name} has no working worker: ${this.health.lastError?.message ?? 'its workers keep failing'}. Unload and load it again once the cause is fixed.`,
    );
  }

  #spawn(): WorkerSlot {
    const id = `${this.name}-w${++this.#workerSeq}`;
    const { batchSize, preloadModel, minWorkers, loadTimeoutMs } = this.settings;
    const { config } = this.ctx;
    const { maxResponseSize } = config;
    const { artifact } = this;
    const worker = this.ctx.workers.places[this.#mode].start(this.#limits, {
      id,
      load: {
        modelName: this.name,
        modelDir: artifact.dir,
        onnxPath: artifact.onnxPath,
        handlerPath: this.#handlerPath,
        intraOpThreads: config.intraOpThreads,
        interOpThreads: config.interOpThreads,
        graphOptimizationLevel: config.graphOptimizationLevel,
        decodeInputRequest: config.decodeInputRequest,
        maxStreamBuffer: config.maxStreamBuffer,
        maxRequestElements: config.maxRequestElements,
        workerId: id,
        gpuId: this.#assignGpu(),
        batchSize,
        concurrentBatches: preloadModel,
        maxResponseSize,
      },
      loadTimeoutMs,
      onnxBytes: artifact.onnxBytes,
      onRan: (micros) => {
        this.#ranMicros += micros;
        this.ctx.events.sink.sharedHostRunTime?.(this.name, micros);
      },
      // A frame carries a whole batch, or up to kCoalesce batch-size-1 answers; the worker refuses
      // any single answer over max_response_size before it is sent.
      maxFrameBytes: maxResponseSize * Math.max(1, batchSize, kCoalesce) + kFrameOverhead,
      capacity: preloadModel ? minWorkers : kPipelineDepth,
    });
    worker.listen(this);
    this.#arrived?.add(worker);
    return worker;
  }

  onResult(worker: WorkerSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    // A process of its own times no session runs: its handler's time stands for what it would take of a host.
    if (kModeTraits[worker.host.policy.mode].ownProcess) this.#ranMicros += msg.modelMicros;
    this.#dispatcher.onResult(batch, msg, done, worker.pid);
    this.#set.onAnswered(worker);
    this.#dispatcher.dispatch();
  }

  onRelocate(worker: WorkerSlot): void {
    this.#set.replace(worker);
    this.#dispatcher.dispatch();
  }

  onExit(worker: WorkerSlot, exit: WorkerExit, running: InFlightBatch[], waiting: InFlightBatch[]): void {
    this.#dispatcher.onExit(exit, running, waiting);
    this.#set.onExit(worker, exit);
    this.#dispatcher.dispatch();
  }

  /** MMS scale API: run `min` workers (up to `max` with autoscale); resolves when the change is done. */
  scale(min: number, max: number): Promise<void> {
    this.settings = { ...this.settings, minWorkers: min, maxWorkers: max };
    if (this.settings.preloadModel) for (const w of this.#set.workers) w.capacity = min;
    const scaling = this.#set.scale(processCount(this.settings));
    // Scaled to zero: what waits in the queue would wait for a worker that never comes (unless autoscale brings one).
    if (this.#set.target === 0 && !this.#scalesFromZero) this.#dispatcher.failQueued(this.#dispatcher.noWorker());
    this.#dispatcher.dispatch();
    return scaling;
  }

  /** min_worker=0 under autoscale: a request queues, and the next round starts a worker (never a shared host's slot). */
  get #scalesFromZero(): boolean {
    return this.autoscaler !== null && kModeTraits[this.#mode].ownProcess && this.settings.maxWorkers > 0;
  }

  /** A request's queue wait, for the autoscaler while it has a range to scale in. */
  #waited(ms: number): void {
    const { minWorkers, maxWorkers, batchSize, maxBatchDelayMs } = this.settings;
    if (maxWorkers <= minWorkers) return;
    // The batch window is a wait batching chose, not one another worker would have shortened.
    this.autoscaler!.waited(Math.max(0, ms - (batchSize > 1 ? maxBatchDelayMs : 0)));
  }

  /** Autoscale: run `target` workers, min_worker and max_worker unchanged. */
  resize(target: number): Promise<void> {
    const scaling = this.#set.scale(target);
    this.#dispatcher.dispatch();
    return scaling;
  }

  /** Autoscale's promotion or demotion: each successor takes requests once loaded, the old worker finishes first. True if all moved. */
  async move(to: WorkerMode): Promise<boolean> {
    const from = this.#mode;
    this.#mode = to;
    const arrived = new Set<WorkerSlot>();
    this.#arrived = arrived;
    try {
      const moved = await this.#set.moveAll();
      // Nowhere to go (every shared host full): the workers serve on where they are, and new ones start there.
      if (!moved && !this.#set.workers.some((w) => arrived.has(w))) this.#mode = from;
      return moved;
    } finally {
      this.#arrived = null;
      this.#dispatcher.dispatch();
    }
  }

  /** Queued jobs fail with `err`, running ones by their workers' exit. */
  async stop(err: MmeError): Promise<void> {
    this.#dispatcher.close(err);
    await this.#set.stop();
  }

  async refreshMemory(): Promise<number> {
    const sizes = await Promise.all(this.#set.workers.map((w) => w.measureMemory()));
    this.memoryBytes = limitBytes(this.settings) ?? sizes.reduce((s, b) => s + b, 0);
    this.memoryMeasuredAt = this.ctx.workers.clock.now();
    this.health.memoryChanged?.();
    return this.memoryBytes;
  }
}
