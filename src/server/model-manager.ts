/**
 * The registry of models (MMS's ModelManager) and the memory-aware cache around it: load, unload,
 * scale, list, describe, and the route from an invoke to a loaded model.
 *
 * - A name is claimed synchronously before any work starts, so of 20 concurrent loads of one name
 *   exactly one proceeds and 19 get 409; an invoke for a model that is loading waits for that load.
 * - A load that would not fit the memory budget (or max_loaded_models) answers 507 before any
 *   process starts, unless the self-managed cache (model_cache) may evict something first.
 * - With the cache on, an invoke for a model that is not loaded but sits in model_store loads it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isRemoteUrl, resolveArtifact, type ModelArtifact } from '../artifacts/model-artifact';
import type { ServerConfig } from '../config/types';
import { MmeError } from '../errors';
import type { WireRequest } from '../protocol/frames';
import { GpuAssigner } from './workers/gpu-assignment';
import { SparePool } from './workers/spare-pool';
import { WorkerHandle, type Assignment } from './workers/worker-handle';
import { createPolicy, type EvictionPolicy } from './cache/eviction-policy';
import type { InvokeResult, JobOptions } from './job';
import { MemoryEstimator, memoryBudgetBytes, memoryLimitBytes } from './memory-budget';
import { Model, type ModelSettings } from './model';
import { Semaphore } from './semaphore';

export interface LoadRequest {
  modelName: string;
  url: string;
  handler?: string;
  batchSize?: number;
  maxBatchDelayMs?: number;
  initialWorkers?: number;
  responseTimeoutSeconds?: number;
  loadTimeoutSeconds?: number;
  jobQueueSize?: number;
  useJobTicket?: boolean;
  preloadModel?: boolean;
  deviceIds?: number[];
  synchronous?: boolean;
  loadedAtStartup?: boolean;
}

type EntryState = 'loading' | 'ready' | 'evicting' | 'unloading';

interface Entry {
  name: string;
  url: string;
  state: EntryState;
  model: Model | null;
  artifact: ModelArtifact | null;
  /** Memory reserved while loading (the estimate); 0 once the model is measured. */
  reservedBytes: number;
  loadedAtStartup: boolean;
  onDemand: boolean;
  /** Resolves when the current transition (load, eviction, unload) is over, whatever its outcome. */
  settled: Promise<void>;
  settle: () => void;
}

export interface CacheStats {
  hits: number;
  misses: number;
  loads: number;
  loadFailures: number;
  evictions: number;
  /** Idle age of each evicted model at eviction, ms (most recent last, bounded). */
  evictedIdleMs: number[];
  loadWaits: number;
  loadWaitMicros: number;
}

/** Hooks the metrics module listens on; every call is synchronous and must not throw. */
export interface ManagerEvents {
  cacheLookup?(model: string, hit: boolean): void;
  modelLoaded?(model: string, micros: number, ok: boolean): void;
  modelUnloaded?(model: string, micros: number): void;
  loadWait?(model: string, micros: number): void;
  evicted?(model: string, idleMs: number): void;
  workerRestarted?(model: string): void;
  loadedModelCount?(n: number): void;
}

/** Model names become directory names in model_store and log fields: a safe alphabet only. */
const kModelName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;
const kEvictedAgesKept = 1000;
/** Memory measurements older than this are refreshed before deciding whether a load fits. */
const kMemoryFreshMs = 5000;

export function checkModelName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter model_name is required.');
  if (!kModelName.test(name) || name.includes('..')) {
    throw new MmeError('MME_ERR_BAD_REQUEST', `model_name ${JSON.stringify(name.slice(0, 64))} is not valid: use 1-255 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  return name;
}

const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;

export class ModelManager {
  readonly #entries = new Map<string, Entry>();
  readonly #gpus: GpuAssigner;
  readonly #workerEnv: NodeJS.ProcessEnv;
  readonly #spares: SparePool | null;
  readonly #loadSlots: Semaphore;
  readonly #roomLock = new Semaphore(1);
  readonly #policy: EvictionPolicy;
  readonly #estimator = new MemoryEstimator();
  readonly #failedLoads = new Map<string, { error: MmeError; until: number }>();
  readonly budgetBytes: number;
  /** close() has begun: new requests are refused while admitted ones finish. */
  closing = false;
  readonly stats: CacheStats = { hits: 0, misses: 0, loads: 0, loadFailures: 0, evictions: 0, evictedIdleMs: [], loadWaits: 0, loadWaitMicros: 0 };
  events: ManagerEvents = {};

  constructor(private readonly config: ServerConfig, private readonly cacheDir: string, private readonly log: (line: string) => void, env: NodeJS.ProcessEnv = process.env) {
    this.#gpus = new GpuAssigner(config.numberOfGpu);
    this.#workerEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !config.blacklistEnvVars?.test(k)));
    this.#loadSlots = new Semaphore(config.maxConcurrentLoads);
    this.#policy = createPolicy(config.evictionPolicy);
    this.budgetBytes = memoryBudgetBytes(config.modelMemoryBudgetBytes, config.modelMemoryReserveBytes, memoryLimitBytes());
    this.#spares = config.spareWorkers > 0 ? new SparePool(config.spareWorkers, { env: this.#workerEnv, gpuId: -1, log }) : null;
  }

  /** Spare workers started and waiting for a model. */
  get sparesReady(): number {
    return this.#spares?.ready ?? 0;
  }

  #startWorker(assignment: Assignment): WorkerHandle {
    const gpuId = assignment.load.gpuId;
    const spare = gpuId < 0 ? this.#spares?.take() : null;
    return (spare ?? new WorkerHandle({ env: this.#workerEnv, gpuId, log: this.log }, assignment.id).start()).assign(assignment);
  }

  /** Explicit load (POST /models): resolves when every worker has loaded, or at once with synchronous=false. */
  async load(req: LoadRequest): Promise<'loaded' | 'accepted'> {
    const name = checkModelName(req.modelName);
    if (typeof req.url !== 'string' || req.url.length === 0) throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter url is required.');
    if (this.#entries.has(name)) throw new MmeError('MME_ERR_MODEL_CONFLICT', `Model ${name} is already registered.`);
    this.#failedLoads.delete(name);
    const work = this.#startLoad(name, req, false);
    if (req.synchronous === false) {
      work.catch((err: MmeError) => this.log(`[${name}] asynchronous load failed: ${err.message}`));
      return 'accepted';
    }
    await work;
    return 'loaded';
  }

  /** Claims the name synchronously, then loads. */
  #startLoad(name: string, req: LoadRequest, onDemand: boolean): Promise<void> {
    let settle!: () => void;
    const settled = new Promise<void>((r) => (settle = r));
    const entry: Entry = { name, url: req.url, state: 'loading', model: null, artifact: null, reservedBytes: 0, loadedAtStartup: req.loadedAtStartup ?? false, onDemand, settled, settle };
    this.#entries.set(name, entry);
    return this.#runLoad(entry, req).finally(settle);
  }

  async #runLoad(entry: Entry, req: LoadRequest): Promise<void> {
    const { name } = entry;
    const t0 = performance.now();
    const release = await this.#loadSlots.acquire();
    try {
      // MMS resolves a relative url against model_store.
      const store = this.config.modelStore;
      // A remote url is not joined: resolveArtifact must see it as given and refuse it (400).
      const url = path.isAbsolute(req.url) || !store || isRemoteUrl(req.url) ? req.url : path.join(store, req.url);
      entry.artifact = await resolveArtifact(url, { cacheDir: this.cacheDir, roots: this.config.modelRoots });
      const settings = this.#settings(req, entry.artifact);
      const processes = settings.preloadModel ? Math.min(1, settings.minWorkers) : settings.minWorkers;
      await this.#reserveRoom(entry, this.#estimator.estimate(entry.artifact.onnxBytes, processes));
      const model = this.#createModel(name, req, entry.artifact, settings);
      entry.model = model;
      await model.start();
      const loadMicros = Math.round((performance.now() - t0) * 1000);
      entry.state = 'ready';
      entry.reservedBytes = 0;
      this.#estimator.learn(entry.artifact.onnxBytes, processes, model.memoryBytes);
      this.#policy.admit(name, model.memoryBytes, loadMicros, performance.now());
      this.stats.loads++;
      this.events.modelLoaded?.(name, loadMicros, true);
      this.events.loadedModelCount?.(this.list().length);
      this.log(`[${name}] loaded from ${req.url} with ${model.workers.length} worker(s) in ${Math.round(loadMicros / 1000)} ms, ${mb(model.memoryBytes)}`);
    } catch (thrown) {
      const err = entry.artifact?.hidePaths(thrown) ?? thrown;
      // A failed load leaves nothing behind: no entry, no process, no extracted files.
      this.#entries.delete(name);
      this.#gpus.forget(name);
      await entry.model?.stop(0);
      await entry.artifact?.dispose();
      this.stats.loadFailures++;
      // Recorded before waiters wake (settle runs after this), so none of them starts a second load.
      // ModelMesh's lesson: a broken model must not be reloaded on every request.
      if (entry.onDemand && this.config.loadFailureCacheSeconds > 0) {
        this.#failedLoads.set(name, { error: err as MmeError, until: Date.now() + this.config.loadFailureCacheSeconds * 1000 });
      }
      this.events.modelLoaded?.(name, Math.round((performance.now() - t0) * 1000), false);
      throw err;
    } finally {
      release();
    }
  }

  #createModel(name: string, req: LoadRequest, artifact: ModelArtifact, settings: ModelSettings): Model {
    const handlerPath = this.#handlerPath(req, artifact);
    const model = new Model(name, req.url, settings, {
      load: {
        modelName: name,
        modelDir: artifact.dir,
        onnxPath: artifact.onnxPath,
        handlerPath: handlerPath ? path.resolve(artifact.dir, handlerPath) : null,
        intraOpThreads: this.config.intraOpThreads,
        interOpThreads: this.config.interOpThreads,
        decodeInputRequest: this.config.decodeInputRequest,
      },
      maxResponseSize: this.config.maxResponseSize,
      assignGpu: () => this.#gpus.assign(name, settings.deviceIds),
      startWorker: (assignment) => this.#startWorker(assignment),
      log: this.log,
    });
    model.on('worker-restart', () => this.events.workerRestarted?.(name));
    return model;
  }

  /**
   * A handler named by the request or the model directory must lie inside that directory: a load
   * request must not be able to run any .js file on the server. default_service_handler is the
   * operator's own choice and may live anywhere.
   */
  #handlerPath(req: LoadRequest, artifact: ModelArtifact): string | null {
    if (req.handler !== undefined) {
      const file = path.resolve(artifact.dir, req.handler);
      if (path.relative(artifact.dir, file).startsWith('..') || path.isAbsolute(path.relative(artifact.dir, file))) {
        throw new MmeError('MME_ERR_BAD_REQUEST', `handler ${JSON.stringify(req.handler)} must be a file inside the model directory`);
      }
      return file;
    }
    if (artifact.handlerPath) return path.resolve(artifact.dir, artifact.handlerPath);
    return this.config.defaultServiceHandler ? path.resolve(artifact.dir, this.config.defaultServiceHandler) : null;
  }

  #settings(req: LoadRequest, artifact: ModelArtifact): ModelSettings {
    const mc = artifact.modelConfig;
    const c = this.config;
    const workers = req.initialWorkers ?? mc.minWorkers ?? c.workersPerModel;
    return {
      minWorkers: workers,
      maxWorkers: Math.max(workers, mc.maxWorkers ?? workers),
      batchSize: req.batchSize ?? mc.batchSize ?? c.defaultBatchSize,
      maxBatchDelayMs: req.maxBatchDelayMs ?? mc.maxBatchDelay ?? c.defaultMaxBatchDelayMs,
      jobQueueSize: req.jobQueueSize ?? mc.jobQueueSize ?? c.jobQueueSize,
      responseTimeoutMs: (req.responseTimeoutSeconds ?? mc.responseTimeout ?? c.responseTimeoutSeconds) * 1000,
      loadTimeoutMs: (req.loadTimeoutSeconds ?? mc.loadTimeout ?? c.modelLoadTimeoutSeconds) * 1000,
      useJobTicket: req.useJobTicket ?? mc.useJobTicket ?? false,
      preloadModel: req.preloadModel ?? mc.preloadModel ?? c.preloadModel,
      deviceIds: req.deviceIds ?? mc.deviceIds ?? null,
    };
  }

  /**
   * Makes room for `needBytes` and reserves it for `entry`, or throws 507. Serialised, so two
   * concurrent loads cannot both take the last free megabytes.
   */
  async #reserveRoom(entry: Entry, needBytes: number): Promise<void> {
    const release = await this.#roomLock.acquire();
    try {
      const { maxLoadedModels } = this.config;
      let used = await this.#usedBytes(entry);
      let count = this.#countedModels(entry);
      const fits = () => used + needBytes <= this.budgetBytes && (maxLoadedModels === 0 || count < maxLoadedModels);
      if (!fits() && this.config.modelCache) {
        for (const victim of this.#victims(entry.name)) {
          if (fits()) break;
          const freed = await this.#evict(victim);
          used -= freed;
          count--;
        }
      }
      if (!fits()) throw this.#noRoom(entry.name, needBytes, used, count);
      entry.reservedBytes = needBytes;
    } finally {
      release();
    }
  }

  #noRoom(name: string, needBytes: number, used: number, count: number): MmeError {
    const { maxLoadedModels, modelCache } = this.config;
    const what = maxLoadedModels > 0 && count >= maxLoadedModels
      ? `${count} models are loaded and max_loaded_models is ${maxLoadedModels}`
      : `it needs about ${mb(needBytes)} and ${mb(used)} of the ${mb(this.budgetBytes)} model memory budget is in use`;
    const fix = modelCache
      ? 'every other model is busy or loading, so nothing could be evicted; retry later, or raise model_memory_budget_mb / max_loaded_models'
      : 'unload a model (DELETE /models/{name}), or raise model_memory_budget_mb / max_loaded_models';
    return new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `Model ${name} does not fit: ${what}. ${fix}.`);
  }

  /** Measured memory of loaded models plus the reservations of models still loading. */
  async #usedBytes(except: Entry): Promise<number> {
    let used = 0;
    const now = Date.now();
    for (const e of this.#entries.values()) {
      if (e === except) continue;
      if (e.model && e.state === 'ready') {
        if (now - e.model.memoryMeasuredAt > kMemoryFreshMs) {
          await e.model.refreshMemory();
          this.#policy.resize(e.name, e.model.memoryBytes);
        }
        used += e.model.memoryBytes;
      } else {
        used += e.reservedBytes + (e.model?.memoryBytes ?? 0);
      }
    }
    return used;
  }

  #countedModels(except: Entry): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e !== except && (e.state === 'ready' || e.state === 'loading')) n++;
    return n;
  }

  /** Eviction candidates in policy order, idle models first; never one that is loading. */
  #victims(loading: string): string[] {
    const order = this.#policy.victims(performance.now()).filter((n) => n !== loading && this.#entries.get(n)?.state === 'ready');
    const idle = order.filter((n) => !this.#entries.get(n)!.model!.busy);
    const busy = order.filter((n) => this.#entries.get(n)!.model!.busy);
    return [...idle, ...busy];
  }

  /** Drains (bounded) and stops a model to free its memory; returns the bytes freed. */
  async #evict(name: string): Promise<number> {
    const entry = this.#entries.get(name)!;
    const model = entry.model!;
    const freed = model.memoryBytes;
    const idleMs = Date.now() - model.lastUsedAt;
    entry.state = 'evicting';
    entry.settled = new Promise((r) => (entry.settle = r));
    this.#policy.remove(name);
    const t0 = performance.now();
    if (!(await model.drain(this.config.evictionDrainTimeoutSeconds * 1000))) {
      this.log(`[${name}] eviction: requests still running after ${this.config.evictionDrainTimeoutSeconds} s (eviction_drain_timeout); stopping anyway`);
    }
    await model.stop(0);
    this.#entries.delete(name);
    this.#gpus.forget(name);
    await entry.artifact?.dispose();
    entry.settle();
    this.stats.evictions++;
    this.stats.evictedIdleMs.push(idleMs);
    if (this.stats.evictedIdleMs.length > kEvictedAgesKept) this.stats.evictedIdleMs.shift();
    this.events.evicted?.(name, idleMs);
    this.events.modelUnloaded?.(name, Math.round((performance.now() - t0) * 1000));
    this.events.loadedModelCount?.(this.list().length);
    this.log(`[${name}] evicted (idle ${Math.round(idleMs / 1000)} s, freed ${mb(freed)})`);
    return freed;
  }

  /** Whether an invoke for `name` can be served: loaded, loading, or (cache on) in model_store. */
  knows(name: string): boolean {
    return this.#entries.has(name) || (this.config.modelCache && kModelName.test(name) && !name.includes('..') && this.#findInStore(name) !== null);
  }

  /** The model if loaded (ready or failed); 404 otherwise. For describe and scale. */
  get(name: string): Model {
    const e = this.#entries.get(name);
    if (!e?.model || e.state !== 'ready') throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    return e.model;
  }

  async invoke(name: string, request: WireRequest, opts?: JobOptions): Promise<InvokeResult> {
    const model = await this.acquire(name);
    return model.submit(request, opts);
  }

  /**
   * The loaded model for an invoke: at once when loaded (a cache hit); after waiting for a load in
   * progress; or, with the cache on, after loading it from model_store (single-flight: concurrent
   * invokes share one load). Waits at most load_wait_timeout, jittered, then 503 + Retry-After.
   */
  async acquire(name: string): Promise<Model> {
    const first = this.#entries.get(name);
    if (first?.state === 'ready') {
      this.stats.hits++;
      this.events.cacheLookup?.(name, true);
      this.#policy.touch(name, performance.now());
      return first.model!;
    }
    if (!first && !this.config.modelCache) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    checkModelName(name);
    const t0 = performance.now();
    const boundMs = this.config.loadWaitTimeoutSeconds * 1000 * (1 + Math.random());
    const deadline = t0 + boundMs;
    let counted = false;
    for (;;) {
      const e = this.#entries.get(name);
      if (e?.state === 'ready') {
        // No touch: the policy counts the load itself as the first use.
        this.#recordWait(name, t0);
        return e.model!;
      }
      if (!e) {
        const started = this.#loadOnDemand(name);
        if (!counted) {
          counted = true;
          this.stats.misses++;
          this.events.cacheLookup?.(name, false);
        }
        if (!started) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
        continue;
      }
      if (!counted) {
        counted = true;
        this.stats.misses++;
        this.events.cacheLookup?.(name, false);
      }
      const remaining = deadline - performance.now();
      const done = await Promise.race([e.settled.then(() => true), new Promise<boolean>((r) => setTimeout(r, Math.max(0, remaining), false).unref())]);
      if (!done) {
        this.#recordWait(name, t0);
        const retryAfter = Math.max(1, Math.ceil(this.config.loadWaitTimeoutSeconds));
        throw new MmeError('MME_ERR_MODEL_LOADING', `Model ${name} is still loading after ${Math.round(boundMs / 1000)} s; the load continues. Retry after ${retryAfter} s.`, { headers: { 'Retry-After': String(retryAfter) } });
      }
      // A load that failed for this very request's sake reports its own error.
      const failed = this.#failedLoads.get(name);
      if (failed && !this.#entries.has(name) && failed.until >= Date.now()) throw failed.error;
      if (!this.config.modelCache && !this.#entries.has(name)) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    }
  }

  #recordWait(name: string, t0: number): void {
    const micros = Math.round((performance.now() - t0) * 1000);
    this.stats.loadWaits++;
    this.stats.loadWaitMicros += micros;
    this.events.loadWait?.(name, micros);
  }

  /**
   * Starts loading `name` from model_store if it is there; false when it is not. A model whose
   * on-demand load failed recently answers with that failure instead of loading again.
   */
  #loadOnDemand(name: string): boolean {
    const failed = this.#failedLoads.get(name);
    if (failed) {
      if (failed.until >= Date.now()) throw failed.error;
      this.#failedLoads.delete(name);
    }
    const url = this.#findInStore(name);
    if (!url) return false;
    this.#startLoad(name, { modelName: name, url }, true).catch((err: MmeError) => this.log(`[${name}] on-demand load from ${url} failed: ${err.message}`));
    return true;
  }

  /** `<model_store>/<name>/` or `<model_store>/<name>.tar.gz` (the name was checked to be one safe path segment). */
  #findInStore(name: string): string | null {
    const store = this.config.modelStore;
    if (!store) return null;
    for (const candidate of [path.join(store, name), path.join(store, `${name}.tar.gz`), path.join(store, `${name}.tgz`)]) {
      if (fs.existsSync(candidate)) return candidate;
    }
    return null;
  }

  /** Unload waits for a load in progress, then releases everything; resolves after every process exited. */
  async unload(name: string): Promise<void> {
    let entry = this.#entries.get(name);
    while (entry && entry.state !== 'ready') {
      await entry.settled;
      entry = this.#entries.get(name);
    }
    if (!entry?.model) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${name}`);
    const model = entry.model;
    const t0 = performance.now();
    entry.state = 'unloading';
    entry.settled = new Promise((r) => (entry!.settle = r));
    this.#policy.remove(name);
    const drained = model.drain(this.config.unregisterModelTimeoutSeconds * 1000);
    if (!(await drained)) this.log(`[${name}] unload: requests still running after ${this.config.unregisterModelTimeoutSeconds} s (unregister_model_timeout); stopping anyway`);
    await model.stop(0);
    this.#entries.delete(name);
    this.#gpus.forget(name);
    await entry.artifact?.dispose();
    entry.settle();
    this.events.modelUnloaded?.(name, Math.round((performance.now() - t0) * 1000));
    this.events.loadedModelCount?.(this.list().length);
    this.log(`[${name}] unloaded`);
  }

  /** Whether `name` is registered: loaded, or loading (a POST /models in progress, or one answered 202). */
  registered(name: string): boolean {
    const state = this.#entries.get(name)?.state;
    return state === 'ready' || state === 'loading';
  }

  /** Scales a loaded model; one still loading is scaled once its load is over (as unload waits for it). */
  async scale(name: string, min: number, max: number, synchronous: boolean): Promise<void> {
    let e = this.#entries.get(name);
    while (e?.state === 'loading') {
      await e.settled;
      e = this.#entries.get(name);
    }
    await this.get(name).scale(min, max, synchronous);
  }

  /** Loaded models, sorted by name. */
  list(): Array<{ name: string; url: string; model: Model; loadedAtStartup: boolean }> {
    const out: Array<{ name: string; url: string; model: Model; loadedAtStartup: boolean }> = [];
    for (const [name, e] of this.#entries) {
      if (e.model && e.state === 'ready') out.push({ name, url: e.url, model: e.model, loadedAtStartup: e.loadedAtStartup });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  entry(name: string): { url: string; state: EntryState; loadedAtStartup: boolean; onDemand: boolean } | undefined {
    return this.#entries.get(name);
  }

  /** Memory the budget counts right now: loaded models as measured, loading ones as reserved. */
  usedBytes(): number {
    let used = 0;
    for (const e of this.#entries.values()) used += e.state === 'ready' ? e.model!.memoryBytes : e.reservedBytes;
    return used;
  }

  /** Stops every model and the spare workers; used on shutdown. */
  async close(drainMs: number): Promise<void> {
    this.closing = true;
    await this.#spares?.close();
    await Promise.all([...this.#entries.values()].map(async (e) => {
      await e.settled;
      if (e.model) {
        await e.model.drain(drainMs);
        await e.model.stop(0);
      }
      await e.artifact?.dispose();
      this.#entries.delete(e.name);
    }));
  }
}
