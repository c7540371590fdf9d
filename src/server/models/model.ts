/**
 * One loaded model: the dispatcher of its requests over its worker set (Model → Dispatcher →
 * WorkerSet), with where its workers start, what they loaded and what they cost.
 */
import { MmeError } from '../../errors';
import type { LoadedMessage, ResultMessage, InvokeRequest } from '../../protocol/messages';
import type { TensorInfo } from '../../model-types';
import type { InFlightBatch } from '../hosts/batches-in-flight';
import type { ModelSlot as WorkerSlot } from '../hosts/model-slot';
import { kModeTraits } from '../hosts/host-policy';
import type { ModelArtifact } from '../../artifacts/model-artifact';
import type { ServerConfig, WorkerMode } from '../../config/types';
import type { WorkerFactory } from '../workers/worker-factory';
import type { LifecycleEvents } from './lifecycle-events';
import { Autoscaler, type ModelLoad } from '../autoscale/autoscaler';
import { limitBytes, type ProcessLimits, workersWithinCpuLimit } from '../processes/limit-enforcement';
import { Dispatcher, kCoalesce } from './dispatcher';
import type { InvokeResult, JobOptions } from '../jobs/job';
import { processCount, type ModelSettings } from './model-settings';
import type { Registration } from './registration';

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

export class Model extends Dispatcher {
  inputs: TensorInfo[] = [];
  outputs: TensorInfo[] = [];
  memoryBytes = 0;
  memoryMeasuredAt = 0;
  /** null: autoscale off, or workers it cannot add one by one (one preload_model process). */
  readonly autoscaler: Autoscaler | null;
  readonly url: string;
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
    /** Its registration: the load it was built from, and the lifecycle it reports its workers' health to. */
    private readonly health: Registration,
    settings: ModelSettings,
    private readonly artifact: ModelArtifact,
    private readonly ctx: ModelContext,
  ) {
    const { config, workers, log } = ctx;
    const { clock } = workers.opts;
    const { name } = health;
    const { waitForRoom } = workers.places[settings.workerMode];
    const onRestarted = () => ctx.events.sink.workerRestarted?.(name);
    super(name, { log, clock, waitForRoom, onRestarted }, settings, settings.handlerPath !== null);
    this.url = health.url;
    this.#assignGpu = workers.places[settings.workerMode].gpuFor(settings.deviceIds);
    // Throws where its limits cannot be held (cpu_limit without cgroups): before any worker starts.
    this.#limits = workers.limits.forModel(name, settings);
    this.#mode = settings.workerMode;
    this.autoscaler =
      config.autoscale && !settings.preloadModel
        ? new Autoscaler(config.autoscale, clock, config.sharedHostHeavyShare, settings.workerMode)
        : null;
  }

  protected workerLoaded(_worker: WorkerSlot, loaded: LoadedMessage): void {
    this.health.markRecovered();
    this.inputs = loaded.inputs;
    this.outputs = loaded.outputs;
    this.streaming = loaded.streaming;
    this.dispatch();
  }

  protected workersFailed(err: MmeError): void {
    this.health.markFailed(err);
    this.failQueued(this.#failedError());
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
      workers: this.workerTarget,
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
    return this.workers.reduce((n, w) => n + w.host.batches.requestsOf(w), 0);
  }

  /** Starts the workers and resolves when all have loaded; rejects on the first failure or on `abort`. */
  override async start(abort: AbortSignal): Promise<void> {
    await super.start(abort);
    await this.refreshMemory();
  }

  override submit(request: InvokeRequest, opts?: JobOptions): Promise<InvokeResult> {
    // Its client left while it waited (for an on-demand load): it is answered here, never queued.
    if (opts?.signal?.aborted)
      return Promise.reject(
        new MmeError(
          'MME_ERR_CLIENT_CLOSED',
          'The client closed the connection while the request waited for the model; it was not run.',
        ),
      );
    if (this.health.failed) return Promise.reject(this.#failedError());
    return super.submit(request, opts);
  }

  #failedError(): MmeError {
    return new MmeError(
      'MME_ERR_MODEL_FAILED',
      `Model ${this.name} has no working worker: ${this.health.lastError?.message ?? 'its workers keep failing'}. Unload and load it again once the cause is fixed.`,
    );
  }

  protected spawnWorker(): WorkerSlot {
    const id = `${this.name}-w${++this.#workerSeq}`;
    const { batchSize, preloadModel, minWorkers, loadTimeoutMs } = this.settings;
    const { config } = this.ctx;
    const { artifact } = this;
    const worker = this.ctx.workers.places[this.#mode].start(this.#limits, {
      id,
      load: {
        modelName: this.name,
        modelDir: artifact.dir,
        onnxPath: artifact.onnxPath,
        handlerPath: this.settings.handlerPath,
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
        maxResponseSize: config.maxResponseSize,
      },
      loadTimeoutMs,
      onnxBytes: artifact.onnxBytes,
      onRan: (micros) => {
        this.#ranMicros += micros;
        this.ctx.events.sink.sharedHostRunTime?.(this.name, micros);
      },
      // A frame carries a whole batch, or up to kCoalesce batch-size-1 answers; the worker refuses
      // any single answer over max_response_size before it is sent.
      maxFrameBytes: config.maxResponseSize * Math.max(1, batchSize, kCoalesce) + kFrameOverhead,
      capacity: preloadModel ? minWorkers : kPipelineDepth,
    });
    worker.listener = this;
    this.#arrived?.add(worker);
    return worker;
  }

  override onResult(worker: WorkerSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    // A process of its own times no session runs: its handler's time stands for what it would take of a host.
    if (kModeTraits[worker.host.policy.mode].ownProcess) this.#ranMicros += msg.modelMicros;
    super.onResult(worker, batch, msg, done);
  }

  /** MMS scale API: run `min` workers (up to `max` with autoscale); resolves when the change is done. */
  scale(min: number, max: number): Promise<void> {
    this.settings = { ...this.settings, minWorkers: min, maxWorkers: max };
    if (this.settings.preloadModel) for (const w of this.workers) w.capacity = min;
    const scaling = this.resize(processCount(this.settings));
    // Scaled to zero: what waits in the queue would wait for a worker that never comes (unless autoscale brings one).
    if (this.workerTarget === 0 && !this.scalesFromZero) this.failQueued(this.noWorker());
    this.dispatch();
    return scaling;
  }

  /** min_worker=0 under autoscale: a request queues, and the next round starts a worker (never a shared host's slot). */
  protected get scalesFromZero(): boolean {
    return this.autoscaler !== null && kModeTraits[this.#mode].ownProcess && this.settings.maxWorkers > 0;
  }

  /** A request's queue wait, for the autoscaler while it has a range to scale in. */
  protected waited(ms: number): void {
    const { minWorkers, maxWorkers, batchSize, maxBatchDelayMs } = this.settings;
    if (!this.autoscaler || maxWorkers <= minWorkers) return;
    // The batch window is a wait batching chose, not one another worker would have shortened.
    this.autoscaler.waited(Math.max(0, ms - (batchSize > 1 ? maxBatchDelayMs : 0)));
  }

  /** Autoscale's promotion or demotion: each successor takes requests once loaded, the old worker finishes first. True if all moved. */
  async move(to: WorkerMode): Promise<boolean> {
    const from = this.#mode;
    this.#mode = to;
    const arrived = new Set<WorkerSlot>();
    this.#arrived = arrived;
    try {
      const moved = await this.moveAll();
      // Nowhere to go (every shared host full): the workers serve on where they are, and new ones start there.
      if (!moved && !this.workers.some((w) => arrived.has(w))) this.#mode = from;
      return moved;
    } finally {
      this.#arrived = null;
      this.dispatch();
    }
  }

  async refreshMemory(): Promise<number> {
    const sizes = await Promise.all(this.workers.map((w) => w.measureMemory()));
    this.memoryBytes = limitBytes(this.settings) ?? sizes.reduce((s, b) => s + b, 0);
    this.memoryMeasuredAt = this.ctx.workers.opts.clock.now();
    this.health.memoryChanged();
    return this.memoryBytes;
  }
}
