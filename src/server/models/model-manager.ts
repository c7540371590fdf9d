/**
 * The models of this server (MMS's ModelManager), as the front ends see them. It wires together
 * the parts that each do one job and answers for them:
 *
 * - ModelRegistry: which registration holds each name; list, describe and counts;
 * - LifecycleOperations: load, unload, scale, eviction and shutdown, each under the name's lock;
 * - OnDemandLoader: the route from an invoke to a loaded model, loading it from model_store when
 *   the self-managed cache is on;
 * - WorkerFactory: where workers start (spares, shared hosts, GPUs);
 * - LifecycleEvents: the cache counters and the metrics hooks;
 * - AutoscaleRounds: each model's autoscale round (autoscale=on), applied by LifecycleOperations.
 */
import type { ServerConfig } from '../../config/types';
import { ModelRepository } from '../../repository/repository';
import type { MmeError } from '../../errors';
import type { InvokeRequest } from '../../protocol/messages';
import { realClock, type Clock } from '../../util/clock';
import { createPolicy } from '../cache/policies';
import type { HostPool } from '../hosts/host-pool';
import type { InvokeResult, JobOptions } from '../jobs/job';
import type { Launch } from '../hosts/host-process';
import { ProcessRegistry } from '../processes/process-registry';
import { WorkerFactory } from '../workers/worker-factory';
import { AutoscaleRounds } from '../autoscale/autoscale-rounds';
import { LifecycleEvents, type CacheStats, type ManagerEvents } from './lifecycle-events';
import { LifecycleOperations, type ShutdownCounts } from './lifecycle-operations';
import type { Model } from './model';
import type { Registration, Phase } from './registration';
import type { LoadRequest } from './model-settings';
import { OnDemandLoader } from './on-demand';
import { ModelRegistry, type ListedModel } from './registry';

export type { ShutdownCounts } from './lifecycle-operations';

export interface ManagerOptions {
  env?: NodeJS.ProcessEnv;
  /** What starts a worker process (lifecycle tests start fake processes that speak frames). */
  launch?: Launch;
  /** What a worker process costs now (bytes); default its PSS. Fake processes have none. */
  readMemory?: (pid: number) => Promise<number>;
  /** The server's worker processes (default: a record of this manager's own). */
  processes?: ProcessRegistry;
  /** What every timer and `now` of the lifecycle core runs on; default the real clock (tests pass a virtual one). */
  clock?: Clock;
}

export class ModelManager {
  readonly #registry = new ModelRegistry();
  readonly #events: LifecycleEvents;
  readonly #workers: WorkerFactory;
  readonly #onDemand: OnDemandLoader;
  readonly #ops: LifecycleOperations;
  readonly #autoscale: AutoscaleRounds<Registration> | null;
  /** model_repository, where on-demand loads look after model_store; null when not configured. */
  readonly repository: ModelRepository | null;

  constructor(config: ServerConfig, cacheDir: string, log: (line: string) => void, opts: ManagerOptions = {}) {
    const registry = this.#registry;
    const clock = opts.clock ?? realClock;
    const events = new LifecycleEvents(() => registry.servingCount());
    this.#events = events;
    this.#workers = new WorkerFactory(config, {
      env: opts.env ?? process.env,
      log,
      clock,
      launch: opts.launch,
      readMemory: opts.readMemory,
      processes: opts.processes ?? new ProcessRegistry(),
      onSharedHostRestarted: () => events.sharedHostRestarted(),
      onSharedHostRecycled: () => events.sharedHostRecycled(),
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
      workers: this.#workers,
      policy,
      events,
      onDemand: this.#onDemand,
      repository,
      log,
      clock,
    });
    this.#autoscale = config.autoscale
      ? new AutoscaleRounds({ clock, entries: () => registry.live, round: (e) => this.#ops.autoscale(e), log })
      : null;
    this.#autoscale?.start();
  }

  get stats(): CacheStats {
    return this.#events.stats;
  }

  /** Where the metrics hooks go. */
  get events(): ManagerEvents {
    return this.#events.sink;
  }

  set events(sink: ManagerEvents) {
    this.#events.sink = sink;
  }

  get budgetBytes(): number {
    return this.#ops.budgetBytes;
  }

  /** close() has begun: new requests are refused while admitted ones finish. */
  get closing(): boolean {
    return this.#ops.closing;
  }

  /** Spare workers started and waiting for a model. */
  get sparesReady(): number {
    return this.#workers.sparesReady;
  }

  /** The shared hosts, if any model has used them. */
  /** Resolves once the autoscale round under way (if any) has finished: a virtual clock's tests advance past it then. */
  autoscaleSettled(): Promise<void> {
    return this.#autoscale?.settled() ?? Promise.resolve();
  }

  get hosts(): HostPool | null {
    return this.#workers.hosts;
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
    this.#autoscale?.stop();
    return this.#ops.close(drainMs);
  }

  /** Whether an invoke for `name` can be served: loaded, loading, or (cache on) in model_store or model_repository. */
  knows(name: string): boolean {
    return this.#onDemand.knows(name);
  }

  acquire(name: string, wait?: { micros: number }): Promise<Registration> {
    return this.#onDemand.acquire(name, wait);
  }

  /** Runs one request on `name`; the model counts as busy (drain waits for it) from here to its answer. */
  async invoke(name: string, request: InvokeRequest, opts?: JobOptions): Promise<InvokeResult> {
    const wait = { micros: 0 };
    const entry = await this.acquire(name, wait);
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

  /** How many serving models are failed. */
  failedCount(): number {
    return this.#registry.failedCount();
  }

  /** The name's registration as describe (and the lifecycle tests) read it; countsAsLoaded: against max_loaded_models. */
  entry(name: string):
    | {
        url: string;
        phase: Phase;
        loadedAtStartup: boolean;
        onDemand: boolean;
        lastError: MmeError | null;
        countsAsLoaded: boolean;
      }
    | undefined {
    return this.#registry.current(name);
  }

  usedBytes(): number {
    return this.#registry.usedBytes();
  }
}
