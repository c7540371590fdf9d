/**
 * The registry of models (MMS's ModelManager): load, unload, scale, list, describe, the route from
 * an invoke to a loaded model, and shutdown. Each registration is a ModelEntry whose phase moves
 * only through its transition table; load, unload, scale, eviction and shutdown of a name hold
 * that name's lock, so they never interleave.
 *
 * - A name is claimed synchronously before any work starts, so of 20 concurrent loads of one name
 *   exactly one proceeds and 19 get 409; an invoke for a model that is loading waits for that load.
 * - A load that would not fit the memory budget (or max_loaded_models) answers 507 before any
 *   process starts, unless the self-managed cache (model_cache) may evict something first.
 * - With the cache on, an invoke for a model that is not loaded but sits in model_store loads it.
 * - Unload and shutdown are bounded (unregister_model_timeout, shutdown_timeout), loads included.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { resolveArtifact } from '../../artifacts/model-artifact';
import type { ServerConfig, WorkerMode } from '../../config/types';
import { MmeError, isMmeError, quote } from '../../errors';
import type { WireRequest } from '../../protocol/frames';
import { within } from '../../util/within';
import { Admission } from '../cache/admission';
import type { EvictionPolicy } from '../cache/eviction-policy';
import { createPolicy } from '../cache/policies';
import { MemoryEstimator, memoryBudgetBytes, memoryLimitBytes } from '../cache/memory-budget';
import { mb } from '../../util/mb';
import { HostPool } from '../hosts/host-pool';
import { FramedProcess } from '../processes/framed-process';
import { GpuAssigner } from '../workers/gpu-assignment';
import type { Assignment, ModelWorker } from '../processes/model-worker';
import { SparePool } from '../workers/spare-pool';
import { WorkerHandle } from '../workers/worker-handle';
import type { InvokeResult, JobOptions } from '../jobs/job';
import { KeyedLock } from '../../util/keyed-lock';
import { Model } from './model';
import { ModelEntry, type Phase } from './model-entry';
import { processCount, resolveHandlerPath, resolveSettings, type LoadRequest } from './model-settings';
import { Semaphore } from '../../util/semaphore';

export type { LoadRequest } from './model-settings';

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
  sharedHostRestarted?(): void;
  sharedHostRecycled?(): void;
  loadedModelCount?(n: number): void;
}

export interface ManagerOptions {
  env?: NodeJS.ProcessEnv;
  /** The seam lifecycle tests fake: a started worker given an assignment (in either worker mode). */
  startWorker?: (assignment: Assignment) => ModelWorker;
}

/** Model names become directory names in model_store and log fields: a safe alphabet only. */
const kModelName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;
const kEvictedAgesKept = 1000;
/** After a bounded shutdown's drain, how long killed processes get to be reaped. */
const kReapBoundMs = 5000;

const isModelName = (name: string) => kModelName.test(name) && !name.includes('..');

export function checkModelName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter model_name is required.');
  if (!isModelName(name)) {
    throw new MmeError('MME_ERR_BAD_REQUEST', `model_name ${quote(name)} is not valid: use 1-255 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  return name;
}

/** A name that could be a model's is shown as MMS shows it; any other is client text, quoted. */
export const modelNotFound = (name: string) => new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${isModelName(name) ? name : quote(name)}`);
const shuttingDown = () => new MmeError('MME_ERR_SHUTTING_DOWN', 'The server is shutting down.');

export class ModelManager {
  /** The current registration of each name. */
  readonly #entries = new Map<string, ModelEntry>();
  /** Every registration not yet gone, current or leaving: what holds memory. */
  readonly #live = new Set<ModelEntry>();
  readonly #locks = new KeyedLock();
  readonly #gpus: GpuAssigner;
  readonly #workerEnv: NodeJS.ProcessEnv;
  readonly #spares: SparePool | null;
  readonly #startWorker: ((assignment: Assignment) => ModelWorker) | null;
  /** The shared hosts, started with the first worker_mode=shared model. */
  #hosts: HostPool | null = null;
  readonly #loadSlots: Semaphore;
  readonly #policy: EvictionPolicy;
  readonly #admission: Admission<ModelEntry>;
  readonly #estimator = new MemoryEstimator();
  readonly #failedLoads = new Map<string, { error: MmeError; until: number }>();
  readonly budgetBytes: number;
  /** close() has begun: new requests are refused while admitted ones finish. */
  closing = false;
  readonly stats: CacheStats = { hits: 0, misses: 0, loads: 0, loadFailures: 0, evictions: 0, evictedIdleMs: [], loadWaits: 0, loadWaitMicros: 0 };
  events: ManagerEvents = {};

  constructor(private readonly config: ServerConfig, private readonly cacheDir: string, private readonly log: (line: string) => void, opts: ManagerOptions = {}) {
    const env = opts.env ?? process.env;
    this.#gpus = new GpuAssigner(config.numberOfGpu);
    this.#workerEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !config.blacklistEnvVars?.test(k)));
    this.#loadSlots = new Semaphore(config.maxConcurrentLoads);
    this.#policy = createPolicy(config.evictionPolicy);
    this.budgetBytes = memoryBudgetBytes(config.modelMemoryBudgetBytes, config.modelMemoryReserveBytes, memoryLimitBytes());
    // Spares speed up dedicated loads; with shared the default, the hosts are what is kept started.
    this.#spares = config.spareWorkers > 0 && !opts.startWorker && config.workerMode === 'dedicated' ? new SparePool(config.spareWorkers, { env: this.#workerEnv, gpuId: -1, log }) : null;
    this.#startWorker = opts.startWorker ?? null;
    this.#admission = new Admission({
      budgetBytes: this.budgetBytes,
      maxLoadedModels: config.maxLoadedModels,
      evicts: config.modelCache,
      policy: this.#policy,
      entries: () => this.#live,
      fixedBytes: () => this.#hosts?.baseBytes ?? 0,
      current: (name) => this.#entries.get(name),
      tryLock: (name) => this.#locks.tryAcquire(name),
      evict: (entry) => this.#evict(entry),
    });
  }

  /** Spare workers started and waiting for a model. */
  get sparesReady(): number {
    return this.#spares?.ready ?? 0;
  }

  /** The shared hosts, if any model has used them. */
  get hosts(): HostPool | null {
    return this.#hosts;
  }

  /** Where a model's workers start: the test seam, a shared host, or a process of its own. */
  #starter(mode: WorkerMode): (assignment: Assignment) => ModelWorker {
    if (this.#startWorker) return this.#startWorker;
    if (mode === 'dedicated') return (a) => this.#startProcess(a);
    this.#hosts ??= new HostPool({
      size: this.config.sharedWorkers,
      maxModelsPerHost: this.config.maxModelsPerWorker,
      recycleWasteBytes: this.config.sharedWorkerRecycleBytes,
      spawn: { env: this.#workerEnv, gpuId: -1, log: this.log },
      log: this.log,
      restarted: () => this.events.sharedHostRestarted?.(),
      recycled: () => this.events.sharedHostRecycled?.(),
    });
    const hosts = this.#hosts;
    return (a) => hosts.place(a);
  }

  #startProcess(assignment: Assignment): WorkerHandle {
    const gpuId = assignment.load.gpuId;
    const spare = gpuId < 0 ? this.#spares?.take() : null;
    return (spare ?? new WorkerHandle({ env: this.#workerEnv, gpuId, log: this.log }, assignment.id).start()).assign(assignment);
  }

  /** Explicit load (POST /models): resolves when every worker has loaded, or at once with synchronous=false. */
  async load(req: LoadRequest): Promise<'loaded' | 'accepted'> {
    const name = checkModelName(req.modelName);
    if (typeof req.url !== 'string' || req.url.length === 0) throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter url is required.');
    if (this.closing) throw shuttingDown();
    const existing = this.#entries.get(name);
    if (existing && (existing.registered || existing.phase === 'loading')) throw new MmeError('MME_ERR_MODEL_CONFLICT', `Model ${name} is already registered.`);
    this.#failedLoads.delete(name);
    const work = this.#startLoad(name, req, false);
    if (req.synchronous === false) {
      work.catch((err: MmeError) => this.log(`[${name}] asynchronous load failed: ${err.message}`));
      return 'accepted';
    }
    await work;
    return 'loaded';
  }

  /** Claims the name synchronously (a leaving registration of it finishes first, under the lock), then loads. */
  #startLoad(name: string, req: LoadRequest, onDemand: boolean): Promise<void> {
    const entry = new ModelEntry(name, req.url, onDemand, req.loadedAtStartup ?? false);
    this.#entries.set(name, entry);
    this.#live.add(entry);
    return this.#runLoad(entry, req);
  }

  async #runLoad(entry: ModelEntry, req: LoadRequest): Promise<void> {
    const { name } = entry;
    const abort = entry.abortLoad.signal;
    const unlock = await this.#locks.acquire(name);
    const releaseSlot = await this.#loadSlots.acquire();
    const t0 = performance.now();
    try {
      abort.throwIfAborted();
      // MMS resolves a relative url against model_store; errors name the url as the client sent it.
      entry.artifact = await resolveArtifact(req.url, { cacheDir: this.cacheDir, roots: this.config.modelRoots, store: this.config.modelStore, handler: req.handler });
      abort.throwIfAborted();
      const settings = resolveSettings(req, entry.artifact, this.config);
      const handlerPath = resolveHandlerPath(entry.artifact, this.config);
      const processes = processCount(settings);
      await this.#admission.reserve(entry, this.#estimator.estimate(entry.artifact.onnxBytes, processes, settings.workerMode), abort);
      const artifact = entry.artifact;
      entry.model = new Model(name, req.url, settings, {
        load: {
          modelName: name,
          modelDir: artifact.dir,
          onnxPath: artifact.onnxPath,
          handlerPath,
          intraOpThreads: this.config.intraOpThreads,
          interOpThreads: this.config.interOpThreads,
          decodeInputRequest: this.config.decodeInputRequest,
          maxStreamBuffer: this.config.maxStreamBuffer,
          maxRequestElements: this.config.maxRequestElements,
        },
        maxResponseSize: this.config.maxResponseSize,
        onnxBytes: artifact.onnxBytes,
        // Hosts run on CPU: one CUDA_VISIBLE_DEVICES per process cannot serve models on different GPUs.
        assignGpu: settings.workerMode === 'shared' ? () => -1 : () => this.#gpus.assign(name, settings.deviceIds),
        startWorker: this.#starter(settings.workerMode),
        log: this.log,
        health: entry,
        restarted: () => this.events.workerRestarted?.(name),
      });
      await entry.model.start(abort);
      const loadMicros = Math.round((performance.now() - t0) * 1000);
      const model = entry.model;
      entry.reservedBytes = 0;
      entry.to('ready');
      this.#estimator.learn(artifact.onnxBytes, processes, settings.workerMode, model.memoryBytes);
      this.#policy.admit(name, model.memoryBytes, loadMicros, performance.now());
      this.stats.loads++;
      this.events.modelLoaded?.(name, loadMicros, true);
      this.events.loadedModelCount?.(this.servingCount());
      const where = settings.workerMode === 'shared' ? `in shared host(s) ${model.workers.map((w) => w.host).join(', ')}` : `with ${model.workers.length} worker(s)`;
      this.log(`[${name}] loaded from ${req.url} ${where} in ${Math.round(loadMicros / 1000)} ms, ${mb(model.memoryBytes)}`);
    } catch (thrown) {
      const err = this.#loadFailure(entry, thrown);
      entry.loadError = err;
      this.stats.loadFailures++;
      // A failed load leaves nothing behind: no entry, no process, no extracted files.
      entry.to('stopping');
      await this.#release(entry, err);
      // ModelMesh's lesson: a broken model must not be reloaded on every request.
      if (entry.onDemand && this.config.loadFailureCacheSeconds > 0 && err.code !== 'MME_ERR_SHUTTING_DOWN') {
        this.#failedLoads.set(name, { error: err, until: Date.now() + this.config.loadFailureCacheSeconds * 1000 });
      }
      this.events.modelLoaded?.(name, Math.round((performance.now() - t0) * 1000), false);
      throw err;
    } finally {
      releaseSlot();
      unlock();
    }
  }

  /** What a load's callers are told: an abort's reason, or the failure with server paths hidden. */
  #loadFailure(entry: ModelEntry, thrown: unknown): MmeError {
    const reason = entry.abortLoad.signal.aborted ? entry.abortLoad.signal.reason : thrown;
    const err = entry.artifact?.hidePaths(reason) ?? reason;
    if (isMmeError(err)) return err;
    this.log(`[${entry.name}] load failed: ${(err as Error)?.stack ?? String(err)}`);
    return new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
  }

  /** Stops the entry's workers, frees its files and GPU slot, and retires it (phase stopping → gone). */
  async #release(entry: ModelEntry, err: MmeError): Promise<void> {
    this.#policy.remove(entry.name);
    await entry.model?.stop(err);
    if (this.#entries.get(entry.name) === entry) {
      this.#entries.delete(entry.name);
      this.#gpus.forget(entry.name);
    }
    await entry.artifact?.dispose();
    entry.reservedBytes = 0;
    entry.to('gone');
    this.#live.delete(entry);
  }

  /** Drains (bounded) and stops an eviction victim, whose lock the caller holds. */
  async #evict(entry: ModelEntry): Promise<void> {
    const { name } = entry;
    const model = entry.model!;
    const freed = model.memoryBytes;
    const idleMs = Date.now() - model.lastUsedAt;
    const t0 = performance.now();
    entry.to('draining');
    if (!(await entry.whenIdle(this.config.evictionDrainTimeoutSeconds * 1000))) {
      this.log(`[${name}] eviction: requests still running after ${this.config.evictionDrainTimeoutSeconds} s (eviction_drain_timeout); stopping anyway`);
    }
    entry.to('stopping');
    await this.#release(entry, new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was evicted to make room before this request finished.`));
    this.stats.evictions++;
    this.stats.evictedIdleMs.push(idleMs);
    if (this.stats.evictedIdleMs.length > kEvictedAgesKept) this.stats.evictedIdleMs.shift();
    this.events.evicted?.(name, idleMs);
    this.events.modelUnloaded?.(name, Math.round((performance.now() - t0) * 1000));
    this.events.loadedModelCount?.(this.servingCount());
    this.log(`[${name}] evicted (idle ${Math.round(idleMs / 1000)} s, freed ${mb(freed)})`);
  }

  /** Whether an invoke for `name` can be served: loaded, loading, or (cache on) in model_store. */
  knows(name: string): boolean {
    return this.#entries.has(name) || (this.config.modelCache && isModelName(name) && this.#findInStore(name) !== null);
  }

  /** The model if registered (ready or failed); 404 otherwise. For describe. */
  get(name: string): Model {
    const e = this.#entries.get(name);
    if (!e?.model || !e.registered) throw modelNotFound(name);
    return e.model;
  }

  /** Runs one request on `name`; the model counts as busy (drain waits for it) from here to its answer. */
  async invoke(name: string, request: WireRequest, opts?: JobOptions): Promise<InvokeResult> {
    const entry = await this.acquire(name);
    try {
      return await entry.model!.submit(request, opts);
    } finally {
      entry.release();
    }
  }

  /**
   * The registration serving `name`, held (release() it): at once when loaded (a cache hit); after
   * waiting for a load in progress; or, with the cache on, after loading it from model_store
   * (single-flight: concurrent invokes share one load). A request that waited for a load that
   * failed gets that load's error. Waits at most load_wait_timeout, jittered, then 503 + Retry-After.
   */
  async acquire(name: string): Promise<ModelEntry> {
    const first = this.#entries.get(name);
    if (first?.registered) {
      this.stats.hits++;
      this.events.cacheLookup?.(name, true);
      this.#policy.touch(name, performance.now());
      first.hold();
      return first;
    }
    if (this.closing) throw shuttingDown();
    if (!first && !this.config.modelCache) throw modelNotFound(name);
    checkModelName(name);
    this.stats.misses++;
    this.events.cacheLookup?.(name, false);
    const t0 = performance.now();
    const boundMs = this.config.loadWaitTimeoutSeconds * 1000 * (1 + Math.random());
    const deadline = t0 + boundMs;
    for (;;) {
      const e = this.#entries.get(name);
      if (e?.registered) {
        // No touch: the policy counts the load itself as the first use.
        this.#recordWait(name, t0);
        e.hold();
        return e;
      }
      if (this.closing) throw shuttingDown();
      if (!e) {
        if (!this.config.modelCache || !this.#loadOnDemand(name)) throw modelNotFound(name);
        continue;
      }
      if (e.phase !== 'loading' && !this.config.modelCache) throw modelNotFound(name);
      // Loading: wait for that load. Leaving: wait until it is gone, then load it again.
      const settled = e.phase === 'loading' ? e.loadSettled : e.gone.then(() => true);
      const outcome = await within(settled, deadline - performance.now(), 'timeout' as const);
      if (outcome === 'timeout') {
        this.#recordWait(name, t0);
        const retryAfter = Math.max(1, Math.ceil(this.config.loadWaitTimeoutSeconds));
        throw new MmeError('MME_ERR_MODEL_LOADING', `Model ${name} is still loading after ${Math.round(boundMs / 1000)} s; the load continues. Retry after ${retryAfter} s.`, { headers: { 'Retry-After': String(retryAfter) } });
      }
      if (outcome === false && e.loadError) throw e.loadError;
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

  /**
   * `<name>/`, `<name>.tar.gz` or `<name>.tgz` in model_store, as a url relative to it (the name was
   * checked to be one safe path segment): what a load error shows, never the store's own path.
   */
  #findInStore(name: string): string | null {
    const store = this.config.modelStore;
    if (!store) return null;
    for (const file of [name, `${name}.tar.gz`, `${name}.tgz`]) {
      if (fs.existsSync(path.resolve(store, file))) return file;
    }
    return null;
  }

  /**
   * DELETE /models/{name}, bounded by unregister_model_timeout: waits for a load in progress (and
   * stops it when the bound is reached), drains admitted requests, kills the workers and waits for
   * them to exit. When the bound was reached the model is gone all the same, and the answer is 408.
   */
  async unload(name: string): Promise<void> {
    const boundMs = this.config.unregisterModelTimeoutSeconds * 1000;
    const deadline = performance.now() + boundMs;
    const entry = this.#entries.get(name);
    if (!entry || !(entry.registered || entry.phase === 'loading')) throw modelNotFound(name);
    let late = false;
    const t0 = performance.now();
    const locking = this.#locks.acquire(name);
    let unlock = await within(locking, boundMs, null);
    if (!unlock) {
      late = true;
      // Still loading at the bound: stop the load, which then gives the lock up at once.
      entry.abortLoad.abort(new MmeError('MME_ERR_MODEL_CONFLICT', `Model ${name} was unloaded (DELETE /models/${name}) before its load finished.`));
      unlock = await locking;
    }
    try {
      if (this.#entries.get(name) !== entry || !entry.registered) {
        if (late) throw this.#unloadTimeout(name, 'it was still loading; the load was stopped and nothing is left of it');
        throw modelNotFound(name);
      }
      entry.to('draining');
      if (!(await entry.whenIdle(deadline - performance.now()))) {
        late = true;
        this.log(`[${name}] unload: requests still running after ${this.config.unregisterModelTimeoutSeconds} s (unregister_model_timeout); stopping its workers`);
      }
      entry.to('stopping');
      await this.#release(entry, new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was unloaded before this request finished.`));
    } finally {
      unlock();
    }
    this.events.modelUnloaded?.(name, Math.round((performance.now() - t0) * 1000));
    this.events.loadedModelCount?.(this.servingCount());
    this.log(`[${name}] unloaded${late ? ' after unregister_model_timeout' : ''}`);
    if (late) throw this.#unloadTimeout(name, 'requests were still running; they were stopped, its workers killed and its files removed');
  }

  #unloadTimeout(name: string, what: string): MmeError {
    return new MmeError('MME_ERR_UNLOAD_TIMEOUT', `Timed out while cleaning resources: ${name}. The unload took longer than unregister_model_timeout (${this.config.unregisterModelTimeoutSeconds} s): ${what}. The model is unloaded.`);
  }

  /** Whether `name` is registered: loaded, or loading (a POST /models in progress, or one answered 202). */
  registered(name: string): boolean {
    const e = this.#entries.get(name);
    return e !== undefined && (e.registered || e.phase === 'loading');
  }

  /**
   * Scales a loaded model; one still loading is scaled once its load is over (it holds the lock
   * until then). Workers it adds must fit the memory budget first: 507 otherwise, with its workers
   * as they were. Resolves once the scale is admitted and under way; `synchronous` waits for the
   * new workers to load and the retired ones to exit.
   */
  async scale(name: string, min: number, max: number, synchronous: boolean): Promise<void> {
    const unlock = await this.#locks.acquire(name);
    let scaling: Promise<void>;
    try {
      const e = this.#entries.get(name);
      if (!e?.model || !e.registered) throw modelNotFound(name);
      const model = e.model;
      const added = processCount({ preloadModel: model.settings.preloadModel, minWorkers: min }) - processCount(model.settings);
      const reserved = added > 0 ? await this.#reserveWorkers(e, added, min) : 0;
      // The reservation stands until the new workers are measured.
      scaling = model.scale(min, max).finally(async () => {
        await model.refreshMemory();
        e.reservedBytes = Math.max(0, e.reservedBytes - reserved);
      });
      if (synchronous) await scaling;
    } finally {
      unlock();
    }
    if (!synchronous) scaling.catch((err: MmeError) => this.log(`[${name}] scaling to ${min} worker(s) failed: ${err.message}`));
  }

  /** Reserves what `added` more workers of the model cost (as its workers measure now, else the estimate); returns the bytes reserved. */
  async #reserveWorkers(e: ModelEntry, added: number, workers: number): Promise<number> {
    const model = e.model!;
    const measured = await model.refreshMemory();
    const live = model.workers.length;
    const perWorker = live > 0 && measured > 0 ? measured / live : this.#estimator.estimate(e.artifact!.onnxBytes, 1, model.settings.workerMode);
    const need = Math.ceil(added * perWorker);
    await this.#admission.reserve(e, need, e.abortLoad.signal, { kind: 'scale', workers });
    return need;
  }

  /** How many models serve (ready or failed): counted, not listed and sorted. */
  servingCount(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.registered) n++;
    return n;
  }

  /** The name of the one serving model, or null when there are none or several (no sorting: /invocations asks per request). */
  onlyModel(): string | null {
    let only: string | null = null;
    for (const [name, e] of this.#entries) {
      if (!e.registered) continue;
      if (only !== null) return null;
      only = name;
    }
    return only;
  }

  /** Serving models (ready or failed), sorted by name. */
  list(): Array<{ name: string; url: string; model: Model; loadedAtStartup: boolean; failed: boolean }> {
    const out: Array<{ name: string; url: string; model: Model; loadedAtStartup: boolean; failed: boolean }> = [];
    for (const [name, e] of this.#entries) {
      if (e.model && e.registered) out.push({ name, url: e.url, model: e.model, loadedAtStartup: e.loadedAtStartup, failed: e.failed });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  entry(name: string): { url: string; phase: Phase; loadedAtStartup: boolean; onDemand: boolean; lastError: MmeError | null } | undefined {
    return this.#entries.get(name);
  }

  /** Memory the budget counts right now: serving models as measured, loading ones as reserved. */
  usedBytes(): number {
    let used = 0;
    for (const e of this.#live) used += e.heldBytes;
    return used;
  }

  /**
   * Shutdown, bounded: loads in progress are stopped at once; serving models drain for up to
   * `drainMs`, then their workers are killed. Whatever still runs after that is SIGKILLed, so this
   * resolves within drainMs plus the time to reap the processes.
   */
  async close(drainMs: number): Promise<void> {
    this.closing = true;
    const deadline = performance.now() + drainMs;
    for (const e of this.#live) if (e.phase === 'loading') e.abortLoad.abort(shuttingDown());
    const spares = this.#spares?.close();
    const stopping = Promise.all([...this.#live].map((e) => this.#shutdownEntry(e, deadline)));
    if ((await within(stopping, drainMs + kReapBoundMs, 'late' as const)) === 'late') {
      this.log(`shutdown: models still stopping after ${Math.round((drainMs + kReapBoundMs) / 1000)} s; killing every worker process`);
      for (const w of FramedProcess.live) w.kill('stopped');
      await within(Promise.all([...FramedProcess.live].map((w) => w.exited)), kReapBoundMs, null);
    }
    await spares;
    await this.#hosts?.close();
  }

  async #shutdownEntry(entry: ModelEntry, deadline: number): Promise<void> {
    const unlock = await this.#locks.acquire(entry.name);
    try {
      if (!entry.registered) return; // a load that was stopped, or an unload or eviction that finished first
      entry.to('draining');
      await entry.whenIdle(deadline - performance.now());
      entry.to('stopping');
      await this.#release(entry, shuttingDown());
    } finally {
      unlock();
    }
  }
}
