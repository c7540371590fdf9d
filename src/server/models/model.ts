/**
 * One loaded model: its worker set and its dispatcher, wired together. It is the listener of its
 * workers: a result goes to the dispatcher; an exit goes to the dispatcher (to settle or requeue
 * what the worker held), then to the worker set (to replace it), then work is dispatched again.
 */
import { MmeError } from '../../errors';
import type { Clock } from '../../util/clock';
import type { ChunkMessage, LoadMessage, ResultMessage, InvokeRequest } from '../../protocol/messages';
import type { TensorInfo } from '../../model-types';
import type { WorkerExit } from '../processes/exit-reason';
import type { Assignment, InFlightBatch, WorkerSlot, WorkerListener } from '../hosts/worker-slot';
import type { AutoscaleConfig, WorkerMode } from '../../config/types';
import { Autoscaler, type ModelLoad } from '../autoscale/autoscaler';
import { limitBytes, workersWithinCpuLimit } from '../processes/process-limits';
import { WorkerSet } from '../workers/worker-set';
import { Dispatcher, kCoalesce } from './dispatcher';
import type { InvokeResult, JobOptions } from '../jobs/job';
import { processCount, type ModelSettings } from './model-settings';

/** The lifecycle the model reports its workers' health to (its registry entry). */
export interface ModelHealth {
  readonly failed: boolean;
  readonly lastError: MmeError | null;
  markFailed(err: MmeError): void;
  markRecovered(): void;
  /** Its memory figure (memoryBytes) changed. */
  memoryChanged?(): void;
}

export interface ModelDeps {
  /** Everything a worker needs to load this model except its id and GPU. */
  load: Omit<
    LoadMessage,
    'workerId' | 'gpuId' | 'batchSize' | 'concurrentBatches' | 'maxResponseSize' | 'slot' | 'shared'
  >;
  maxResponseSize: number;
  /** Size of the model file and its external data. */
  onnxBytes: number;
  assignGpu: () => number;
  /** A started worker (a warm spare when one is free) given this assignment: the seam tests fake. */
  startWorker: (assignment: Assignment) => WorkerSlot;
  /** A shared model's: where its workers start while it is promoted (a process of its own each). */
  startOwnWorker?: (assignment: Assignment) => WorkerSlot;
  log: (line: string) => void;
  health: ModelHealth;
  /** A replacement worker was started (WorkerRestarts). */
  onRestarted?: () => void;
  /** Its session runs in a shared host took `micros` more (SharedHostRunTime). */
  onRan?: (micros: number) => void;
  /** Where a worker set with nowhere to start a worker waits for room (shared hosts). */
  waitForRoom?: (wake: () => void) => void;
  /** What its timers (restart back-off, response timeout, batch window) and idle age run on: the server's clock. */
  clock: Clock;
  /** autoscale's thresholds; null = off. */
  autoscale: AutoscaleConfig | null;
  /** shared_host_heavy_share: past it a shared model is promoted (autoscale on); 0 = never. */
  heavyShare: number;
}

/**
 * Batches sent ahead to a busy worker: while it runs one, the next already waits in its pipe, so
 * it never idles for a parent round trip (3.4× the throughput of one-at-a-time on a tiny model).
 */
const kPipelineDepth = 2;
/** Room in a Result frame beyond its bodies: headers, status lines, error messages. */
const kFrameOverhead = 1 << 20;

export class Model implements WorkerListener {
  readonly loadedAt = new Date();
  inputs: TensorInfo[] = [];
  outputs: TensorInfo[] = [];
  streaming = false;
  memoryBytes = 0;
  memoryMeasuredAt = 0;
  /** clock.now() of the last admitted request (or of the load): the idle age eviction reports. */
  lastUsedAt: number;
  /**
   * Its autoscaling policy, or null: autoscale off, or workers it cannot add one by one (one
   * preload_model process). A shared host's model is promoted rather than scaled.
   */
  readonly autoscaler: Autoscaler | null;
  readonly #set: WorkerSet;
  readonly #dispatcher: Dispatcher;
  #workerSeq = 0;
  /** Where new workers start: its worker_mode, or (a promoted shared model) processes of its own. */
  #mode: WorkerMode;
  #moving = false;
  /** Its session runs' time so far over every worker it has had (in a process of its own: its handler's time), µs. */
  #ranMicros = 0;

  constructor(
    readonly name: string,
    readonly url: string,
    public settings: ModelSettings,
    private readonly deps: ModelDeps,
  ) {
    this.#mode = settings.workerMode;
    this.lastUsedAt = deps.clock.now();
    const heavyShare = deps.startOwnWorker ? deps.heavyShare : 0;
    this.autoscaler =
      deps.autoscale && !settings.preloadModel
        ? new Autoscaler(deps.autoscale, deps.clock, heavyShare, settings.workerMode)
        : null;
    this.#set = new WorkerSet(processCount(settings), {
      name,
      spawn: () => this.#spawn(),
      log: deps.log,
      onLoaded: (_worker, loaded) => {
        this.inputs = loaded.inputs;
        this.outputs = loaded.outputs;
        this.streaming = loaded.streaming;
        this.#dispatcher.dispatch();
      },
      onRestarted: () => deps.onRestarted?.(),
      onFailed: (err) => {
        deps.health.markFailed(err);
        this.#dispatcher.failQueued(this.#failedError());
      },
      onRecovered: () => deps.health.markRecovered(),
      waitForRoom: deps.waitForRoom,
      clock: deps.clock,
    });
    this.#dispatcher = new Dispatcher({
      name,
      settings: () => this.settings,
      streaming: () => this.streaming,
      workers: this.#set,
      withHeaders: deps.load.handlerPath !== null,
      log: deps.log,
      clock: deps.clock,
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

  /**
   * Whether memoryBytes can change after the load: a dedicated worker's PSS moves with its use; a
   * model in a shared host costs what its load measured, for good.
   */
  get memoryMoves(): boolean {
    return this.#mode === 'dedicated';
  }

  /** Where its workers run now (a shared model's are in processes of their own while it is promoted). */
  get mode(): WorkerMode {
    return this.#mode;
  }

  /** What an autoscale round judges. */
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
      moving: this.#moving,
    };
  }

  /** Requests handed to its workers and not answered yet. */
  get inFlightRequests(): number {
    return this.#dispatcher.inFlightRequests;
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
    if (this.deps.health.failed) return Promise.reject(this.#failedError());
    this.lastUsedAt = this.deps.clock.now();
    return this.#dispatcher.submit(request, opts);
  }

  #failedError(): MmeError {
    return new MmeError(
      'MME_ERR_MODEL_FAILED',
      `Model ${this.name} has no working worker: ${this.deps.health.lastError?.message ?? 'its workers keep failing'}. Unload and load it again once the cause is fixed.`,
    );
  }

  #spawn(): WorkerSlot {
    const id = `${this.name}-w${++this.#workerSeq}`;
    const { batchSize, preloadModel, minWorkers, loadTimeoutMs } = this.settings;
    const start =
      this.#mode === 'dedicated' ? (this.deps.startOwnWorker ?? this.deps.startWorker) : this.deps.startWorker;
    const worker = start({
      id,
      load: {
        ...this.deps.load,
        workerId: id,
        gpuId: this.deps.assignGpu(),
        batchSize,
        concurrentBatches: preloadModel,
        maxResponseSize: this.deps.maxResponseSize,
      },
      loadTimeoutMs,
      onnxBytes: this.deps.onnxBytes,
      onRan: (micros) => {
        this.#ranMicros += micros;
        this.deps.onRan?.(micros);
      },
      // A frame carries a whole batch, or up to kCoalesce batch-size-1 answers; the worker refuses
      // any single answer over max_response_size before it is sent.
      maxFrameBytes: this.deps.maxResponseSize * Math.max(1, batchSize, kCoalesce) + kFrameOverhead,
      capacity: preloadModel ? minWorkers : kPipelineDepth,
    });
    worker.listen(this);
    return worker;
  }

  onResult(worker: WorkerSlot, batch: InFlightBatch, msg: ResultMessage, done: boolean): void {
    // A process of its own times no session runs (only a shared host's models share a thread, and
    // are timed): its handler's time stands for them, what it would take of a host if it went back.
    if (worker.mode === 'dedicated') this.#ranMicros += msg.modelMicros;
    this.#dispatcher.onResult(batch, msg, done, worker.pid);
    this.#set.onAnswered(worker);
    this.#dispatcher.dispatch();
  }

  onChunk(worker: WorkerSlot, msg: ChunkMessage): void {
    this.#dispatcher.onChunk(worker, msg);
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

  /**
   * MMS scale API: run `min` workers (max is what autoscale may add up to). Applied at once;
   * resolves when the started workers have loaded and the retired ones have exited.
   */
  scale(min: number, max: number): Promise<void> {
    this.settings = { ...this.settings, minWorkers: min, maxWorkers: max };
    if (this.settings.preloadModel) for (const w of this.#set.workers) w.resize(min);
    const scaling = this.#set.scale(processCount(this.settings));
    // Scaled to zero: what waits in the queue would wait for a worker that never comes (unless autoscale brings one).
    if (this.#set.target === 0 && !this.#scalesFromZero) this.#dispatcher.failQueued(this.#dispatcher.noWorker());
    this.#dispatcher.dispatch();
    return scaling;
  }

  /**
   * min_worker=0 under autoscale: a request queues, and the next round's backlog rule starts a
   * worker. Not in a shared host, where autoscale adds no slot.
   */
  get #scalesFromZero(): boolean {
    return this.autoscaler !== null && this.#mode === 'dedicated' && this.settings.maxWorkers > 0;
  }

  /** A request's queue wait, for the autoscaler while it has a range to scale in. */
  #waited(ms: number): void {
    const { minWorkers, maxWorkers, batchSize, maxBatchDelayMs } = this.settings;
    if (maxWorkers <= minWorkers) return;
    // The batch window is a wait batching chose, not one another worker would have shortened.
    this.autoscaler!.waited(Math.max(0, ms - (batchSize > 1 ? maxBatchDelayMs : 0)));
  }

  /**
   * Autoscale: run `target` workers, min_worker and max_worker unchanged. Resolves when the started
   * worker has loaded, or the retired one exited.
   */
  resize(target: number): Promise<void> {
    const scaling = this.#set.scale(target);
    this.#dispatcher.dispatch();
    return scaling;
  }

  /**
   * Autoscale's promotion (to dedicated) or demotion (to shared): each worker's successor starts in
   * the new place and takes the model's requests once it has loaded; the old one finishes what it
   * holds, then goes (its slot released, or its process stopped). No request waits for the move,
   * and none runs twice: a request is in one worker's hands at a time. Resolves when every
   * successor has loaded (or failed, and is replaced as a death is) and every old worker is gone:
   * true if every worker moved. A worker with nowhere to go (every shared host full) stays.
   */
  async move(to: WorkerMode): Promise<boolean> {
    const from = this.#mode;
    this.#mode = to;
    this.#moving = true;
    try {
      const moved = await this.#set.moveAll();
      // Nowhere to go (every shared host full): the workers serve on where they are, and new ones start there.
      if (!moved && !this.#set.workers.some((w) => w.mode === to)) this.#mode = from;
      return moved;
    } finally {
      this.#moving = false;
      this.#dispatcher.dispatch();
    }
  }

  /** Stops every worker and waits until each process has exited; queued jobs fail with `err`, running ones by their workers' exit. */
  async stop(err: MmeError): Promise<void> {
    this.#dispatcher.close(err);
    await this.#set.stop();
  }

  async refreshMemory(): Promise<number> {
    const sizes = await Promise.all(this.#set.workers.map((w) => w.measureMemory()));
    this.memoryBytes = limitBytes(this.settings) ?? sizes.reduce((s, b) => s + b, 0);
    this.memoryMeasuredAt = this.deps.clock.now();
    this.deps.health.memoryChanged?.();
    return this.memoryBytes;
  }
}
