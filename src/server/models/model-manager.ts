/**
 * The models of this server (MMS's ModelManager), as the front ends see them: it wires together
 * ModelRegistry (names, list, describe, counts), LifecycleOperations (load, unload, scale,
 * eviction, shutdown), OnDemandLoader (invoke to loaded model), WorkerFactory (where workers
 * start), LifecycleEvents (cache counters, metrics hooks) and AutoscaleRounds.
 */
import type { ServerConfig } from '../../config/types';
import { ModelRepository } from '../../repository/repository';
import type { InvokeRequest } from '../../protocol/messages';
import { realClock } from '../../util/clock';
import { createPolicy } from '../cache/eviction-classes';
import type { InvokeResult, JobOptions } from '../jobs/job';
import { ProcessRegistry } from '../processes/process-registry';
import type { LimitEnforcement } from '../processes/limit-enforcement';
import { WorkerFactory, type WorkerFactoryOptions } from '../workers/worker-factory';
import { AutoscaleRounds } from '../autoscale/autoscale-rounds';
import { LifecycleEvents, type CacheStats, type ManagerEvents } from './lifecycle-events';
import { LifecycleOperations } from './lifecycle-operations';
import type { ShutdownCounts } from './shutdown';
import type { Model } from './model';
import type { Registration } from './registration';
import type { LoadRequest } from './model-settings';
import { OnDemandLoader } from './on-demand';
import { ModelRegistry, type ListedModel } from './registry';

export type { ShutdownCounts } from './shutdown';

/** Defaults: process.env, real processes, a record of this manager's own processes, the real clock. */
export type ManagerOptions = Partial<
  Pick<WorkerFactoryOptions, 'env' | 'launch' | 'readMemory' | 'processes' | 'clock'>
>;

export class ModelManager {
  readonly #registry = new ModelRegistry();
  readonly #events: LifecycleEvents;
  readonly workers: WorkerFactory;
  readonly #onDemand: OnDemandLoader;
  readonly #ops: LifecycleOperations;
  readonly autoscale: AutoscaleRounds<Registration> | null;
  readonly repository: ModelRepository | null;

  constructor(config: ServerConfig, cacheDir: string, log: (line: string) => void, opts: ManagerOptions = {}) {
    const registry = this.#registry;
    const clock = opts.clock ?? realClock;
    const events = new LifecycleEvents(() => registry.servingCount());
    this.#events = events;
    this.workers = new WorkerFactory(config, {
      env: opts.env ?? process.env,
      log,
      clock,
      launch: opts.launch,
      readMemory: opts.readMemory,
      processes: opts.processes ?? new ProcessRegistry(),
      onSharedHostRestarted: () => events.sink.sharedHostRestarted?.(),
      onSharedHostRecycled: () => events.sink.sharedHostRecycled?.(),
    });
    const policy = createPolicy(config.evictionPolicy);
    const repository = config.repository ? new ModelRepository(config.repository, log) : null;
    this.repository = repository;
    this.#onDemand = new OnDemandLoader({
      config,
      registry,
      policy,
      events,
      repository,
      clock,
      closing: () => this.#ops.closing,
      startLoad: (name, url) => this.#ops.startLoad(name, { modelName: name, url }, true),
    });
    this.#ops = new LifecycleOperations({
      config,
      cacheDir,
      registry,
      workers: this.workers,
      policy,
      events,
      onDemand: this.#onDemand,
      repository,
      log,
      clock,
    });
    this.autoscale = config.autoscale
      ? new AutoscaleRounds({ clock, entries: () => registry.live, round: (e) => this.#ops.autoscale(e), log })
      : null;
    this.autoscale?.start();
  }

  get stats(): CacheStats {
    return this.#events.stats;
  }

  get events(): ManagerEvents {
    return this.#events.sink;
  }

  set events(sink: ManagerEvents) {
    this.#events.sink = sink;
  }

  get budgetBytes(): number {
    return this.#ops.budgetBytes;
  }

  get closing(): boolean {
    return this.#ops.closing;
  }

  /** How memory_limit_mb and cpu_limit are held here (the ready line and GET /models/{name} say). */
  get limits(): LimitEnforcement {
    return this.workers.limits;
  }

  load(req: LoadRequest): Promise<'loaded' | 'accepted'> {
    return this.#ops.load(req);
  }

  unload(name: string): Promise<void> {
    return this.#ops.unload(name);
  }

  scale(name: string, min: number, max: number, synchronous: boolean): Promise<void> {
    return this.#ops.scale(name, min, max, synchronous);
  }

  close(drainMs: number): Promise<ShutdownCounts> {
    this.autoscale?.stop();
    return this.#ops.close(drainMs);
  }

  /** Whether an invoke for `name` can be served: loaded, loading, or (cache on) in model_store or model_repository. */
  knows(name: string): boolean {
    return this.#onDemand.knows(name);
  }

  /** Runs one request on `name`; the model counts as busy (drain waits for it) from here to its answer. */
  async invoke(name: string, request: InvokeRequest, opts?: JobOptions): Promise<InvokeResult> {
    const wait = { micros: 0 };
    const entry = await this.#onDemand.acquire(name, wait);
    try {
      const result = await entry.model!.submit(request, opts);
      return wait.micros === 0 ? result : { ...result, loadWaitMicros: wait.micros };
    } catch (err) {
      // A handler's error can name a file in the model's directory: shown as the url the client sent, as at load.
      throw entry.artifact?.hidePaths(err) ?? err;
    } finally {
      entry.release();
    }
  }

  get(name: string): Model {
    return this.#registry.get(name);
  }

  registered(name: string): boolean {
    return this.#registry.registered(name);
  }

  servingCount(): number {
    return this.#registry.servingCount();
  }

  onlyModel(): string | null {
    return this.#registry.onlyModel();
  }

  list(): ListedModel[] {
    return this.#registry.list();
  }

  /** Up to `count` serving models from position `start` in name order. */
  page(start: number, count: number): ListedModel[] {
    return this.#registry.page(start, count);
  }

  failedCount(): number {
    return this.#registry.failedCount();
  }

  /** The name's registration as describe (and the lifecycle tests) read it; countsAsLoaded: against max_loaded_models. */
  entry(
    name: string,
  ): Pick<Registration, 'url' | 'phase' | 'loadedAtStartup' | 'onDemand' | 'lastError' | 'countsAsLoaded'> | undefined {
    return this.#registry.current(name);
  }

  usedBytes(): number {
    return this.#registry.held('all').bytes;
  }
}
