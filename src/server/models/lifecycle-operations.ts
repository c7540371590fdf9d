/**
 * The five operations that change a registration: load, unload, scale, eviction and shutdown. Each
 * holds the name's lock, so none acts on a state another is halfway through changing, and moves
 * the entry only through its transition table (registration.ts).
 *
 * - A name is claimed synchronously before any work starts, so of 20 concurrent loads of one name
 *   exactly one proceeds and 19 get 409; an invoke for a model that is loading waits for that load.
 * - A load that would not fit the memory budget (or max_loaded_models) answers 507 before any
 *   process starts, unless the self-managed cache (model_cache) may evict something first.
 * - Unload and shutdown are bounded (unregister_model_timeout, shutdown_timeout), loads included.
 */
import { performance } from 'node:perf_hooks';
import { resolveArtifact } from '../../artifacts/model-artifact';
import { repositoryArtifact } from '../../repository/artifact';
import type { ModelRepository } from '../../repository/repository';
import type { ServerConfig } from '../../config/types';
import { MmeError, isMmeError } from '../../errors';
import { autoscaleStep } from '../autoscale/autoscale-step';
import type { Clock } from '../../util/clock';
import { KeyedLock } from '../../util/keyed-lock';
import { type DirReads, dirReadsFor } from '../../artifacts/dir-reads';
import { mb } from '../../util/mb';
import { deadlineSignal } from '../../util/deadline-signal';
import { within } from '../../util/within';
import { Admission, type Purpose } from '../cache/admission';
import type { ClassedPolicy } from '../cache/eviction-classes';
import { MemoryEstimator, memoryBudgetBytes, memoryLimitBytes } from '../cache/memory-budget';
import type { WorkerFactory } from '../workers/worker-factory';
import { buildModel } from './build-model';
import type { LifecycleEvents } from './lifecycle-events';
import { LoadPermits } from './load-permits';
import { Registration } from './registration';
import { checkModelName, modelNotFound, shuttingDown } from './model-names';
import { processCount, resolveHandlerPath, resolveSettings, type LoadRequest } from './model-settings';
import type { OnDemandLoader } from './on-demand';
import type { ModelRegistry } from './registry';

export interface OperationsDeps {
  config: ServerConfig;
  cacheDir: string;
  registry: ModelRegistry;
  workers: WorkerFactory;
  policy: ClassedPolicy;
  events: LifecycleEvents;
  onDemand: OnDemandLoader;
  /** model_repository, where on-demand loads look after model_store; null when not configured. */
  repository: ModelRepository | null;
  log: (line: string) => void;
  /** What every bound of the operations runs on: the server's clock. */
  clock: Clock;
}

/** What a shutdown did to the requests it found admitted. */
export interface ShutdownCounts {
  drained: number;
  cutOff: number;
}

/** After a bounded shutdown's drain, how long killed processes get to be reaped. */
const kReapBoundMs = 5000;

export class LifecycleOperations {
  readonly #locks = new KeyedLock();
  readonly #loadPermits: LoadPermits;
  readonly #admission: Admission<Registration>;
  readonly #estimator = new MemoryEstimator();
  /** Synchronous when every model root is on a local file system (decided once, at the first load). */
  #readsChosen: Promise<DirReads> | null = null;
  readonly budgetBytes: number;
  /** close() has begun: new requests are refused while admitted ones finish. */
  closing = false;

  constructor(private readonly deps: OperationsDeps) {
    const { config, registry } = deps;
    this.#loadPermits = new LoadPermits(config.maxConcurrentLoads);
    this.budgetBytes = memoryBudgetBytes(
      config.modelMemoryBudgetBytes,
      config.modelMemoryReserveBytes,
      memoryLimitBytes(),
    );
    this.#admission = new Admission({
      budgetBytes: this.budgetBytes,
      maxLoadedModels: config.maxLoadedModels,
      evicts: config.modelCache,
      policy: deps.policy,
      clock: deps.clock,
      tally: registry,
      fixedBytes: () => deps.workers.hostBaseBytes,
      current: (name) => registry.current(name),
      tryLock: (name) => this.#locks.tryAcquire(name),
      evict: (entry, why) => this.#evict(entry, why),
    });
  }

  /** Explicit load (POST /models): resolves when every worker has loaded, or at once with synchronous=false. */
  async load(req: LoadRequest): Promise<'loaded' | 'accepted'> {
    const name = checkModelName(req.modelName);
    if (typeof req.url !== 'string' || req.url.length === 0)
      throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter url is required.');
    if (this.closing) throw shuttingDown();
    const existing = this.deps.registry.current(name);
    if (existing && (existing.serving || existing.phase === 'loading'))
      throw new MmeError('MME_ERR_MODEL_CONFLICT', `Model ${name} is already registered.`);
    this.deps.onDemand.forgetFailure(name);
    const work = this.startLoad(name, req, false);
    if (req.synchronous === false) {
      // #loadFailure has logged why; nobody else is waiting for this answer.
      work.catch(() => {});
      return 'accepted';
    }
    await work;
    return 'loaded';
  }

  /** Claims the name synchronously (a leaving registration of it finishes first, under the lock), then loads. */
  startLoad(name: string, req: LoadRequest, onDemand: boolean): Promise<void> {
    const entry = new Registration(name, req.url, onDemand, req.loadedAtStartup ?? false, this.deps.clock);
    this.deps.registry.claim(entry);
    return this.#runLoad(entry, req);
  }

  /** The repository this load fetches from: only the on-demand loader makes its url (a client's s3:// url is never fetched). */
  #repositoryOf(entry: Registration, req: LoadRequest): ModelRepository | null {
    const { repository } = this.deps;
    return entry.onDemand && req.url === repository?.urlOf(entry.name) ? repository : null;
  }

  /** The model on local disk: from model_repository for an on-demand load that found it there, else from the url. */
  async #resolve(entry: Registration, req: LoadRequest, abort: AbortSignal): ReturnType<typeof resolveArtifact> {
    const { config } = this.deps;
    const opts = { cacheDir: this.deps.cacheDir, roots: config.modelRoots, handler: req.handler };
    const seconds = req.loadTimeoutSeconds ?? config.modelLoadTimeoutSeconds;
    const repository = this.#repositoryOf(entry, req);
    if (repository)
      return repositoryArtifact(repository, entry.name, opts, abort, { seconds, timers: this.deps.clock });
    // MMS resolves a relative url against model_store; errors name the url as the client sent it.
    return resolveArtifact(req.url, {
      ...opts,
      store: config.modelStore,
      reads: await (this.#readsChosen ??= dirReadsFor(config.modelRoots)),
    });
  }

  async #runLoad(entry: Registration, req: LoadRequest): Promise<void> {
    const { name } = entry;
    const { config, events, log } = this.deps;
    const abort = entry.abortLoad.signal;
    const unlock = await this.#locks.acquire(name);
    // The waits for a load slot and for room end at the load's own load_timeout, whatever the loads ahead do.
    const waitSeconds = req.loadTimeoutSeconds ?? config.modelLoadTimeoutSeconds;
    const waiting = deadlineSignal(
      abort,
      waitSeconds * 1000,
      () =>
        new MmeError(
          'MME_ERR_LOAD_WAIT_TIMEOUT',
          `Model ${name} waited ${waitSeconds} s (its load_timeout) for a load slot (max_concurrent_loads) or for room (max_loaded_models, the memory budget) behind other loads, and gave up; nothing of it is left. Retry later, or load it with a longer load_timeout.`,
        ),
      this.deps.clock,
    );
    let releasePermit = () => {};
    const t0 = performance.now();
    try {
      releasePermit = await this.#loadPermits.acquire(this.#repositoryOf(entry, req) !== null, waiting.signal);
      const artifact = await this.#resolve(entry, req, abort);
      entry.resolved(artifact);
      abort.throwIfAborted();
      const settings = resolveSettings(req, artifact, config);
      const processes = processCount(settings);
      await this.#admission.reserve(
        entry,
        this.#estimator.estimate(artifact.onnxBytes, processes, settings.workerMode),
        waiting.signal,
      );
      waiting.done();
      const model = buildModel(
        { name, url: req.url, settings, artifact, handlerPath: resolveHandlerPath(artifact, config), health: entry },
        config,
        this.deps.workers,
        events,
        log,
      );
      entry.built(model);
      await model.start(abort);
      const loadMicros = Math.round((performance.now() - t0) * 1000);
      entry.unreserve();
      entry.to('ready');
      this.#estimator.learn(artifact.onnxBytes, processes, settings.workerMode, model.memoryBytes);
      this.deps.policy.admit(name, model.memoryBytes, loadMicros, this.deps.clock.now(), settings);
      events.loaded(name, loadMicros);
      events.workers(name, model.workerTarget);
      const where =
        settings.workerMode === 'shared'
          ? `in shared host(s) ${model.workers.map((w) => w.hostId).join(', ')}`
          : `with ${model.workers.length} worker(s)`;
      log(`[${name}] loaded from ${req.url} ${where} in ${Math.round(loadMicros / 1000)} ms, ${mb(model.memoryBytes)}`);
    } catch (thrown) {
      const err = this.#loadFailure(entry, req, thrown);
      entry.loadFailed(err);
      events.loadFailed();
      // A failed load leaves nothing behind: no entry, no process, no extracted files.
      entry.to('stopping');
      await this.#release(entry, err);
      if (entry.onDemand) this.deps.onDemand.rememberFailure(name, err);
      events.failedLoadReleased(name, Math.round((performance.now() - t0) * 1000));
      throw err;
    } finally {
      waiting.done();
      releasePermit();
      unlock();
    }
  }

  /**
   * What a load's callers are told: an abort's reason, or the failure with server paths hidden.
   * Logged here, once for every kind of load, with its reason: on SageMaker the platform sends
   * POST /models, so the server log (CloudWatch Logs) is the only place a user can read why.
   */
  #loadFailure(entry: Registration, req: LoadRequest, thrown: unknown): MmeError {
    const reason: unknown = entry.abortLoad.signal.aborted ? entry.abortLoad.signal.reason : thrown;
    const err: unknown = entry.artifact?.hidePaths(reason) ?? reason;
    const kind = entry.onDemand ? 'on-demand load' : entry.loadedAtStartup ? 'start-up load' : 'load';
    const cause = isMmeError(err) && err.cause instanceof Error ? ` (${err.cause.message})` : '';
    this.deps.log(
      `[${entry.name}] ${kind} from ${req.url} failed: ${isMmeError(err) ? `${err.code}: ${err.message}${cause}` : ((err as Error)?.stack ?? String(err))}`,
    );
    if (isMmeError(err)) return err;
    return new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
  }

  /** Stops the entry's workers, frees its files and GPU slot, and retires it (phase stopping → gone). */
  async #release(entry: Registration, err: MmeError): Promise<void> {
    this.deps.policy.remove(entry.name);
    await entry.model?.stop(err);
    if (this.deps.registry.release(entry)) this.deps.workers.forgetGpus(entry.name);
    await entry.artifact?.dispose();
    entry.unreserve();
    entry.to('gone');
    this.deps.registry.forget(entry);
    this.deps.events.workers(entry.name, 0);
  }

  /** Drains (bounded) and stops an eviction victim, whose lock the caller holds. */
  async #evict(entry: Registration, why: string): Promise<void> {
    const { name } = entry;
    const { config, log } = this.deps;
    const model = entry.model!;
    const freed = model.memoryBytes;
    const idleMs = this.deps.clock.now() - model.lastUsedAt;
    const t0 = performance.now();
    entry.to('draining');
    if (!(await entry.whenIdle(config.evictionDrainTimeoutSeconds * 1000))) {
      log(
        `[${name}] eviction: requests still running after ${config.evictionDrainTimeoutSeconds} s (eviction_drain_timeout); stopping anyway`,
      );
    }
    entry.to('stopping');
    await this.#release(
      entry,
      new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was evicted to make room before this request finished.`),
    );
    this.deps.events.evicted(name, idleMs, Math.round((performance.now() - t0) * 1000));
    log(`[${name}] evicted ${why} (idle ${Math.round(idleMs / 1000)} s, freed ${mb(freed)})`);
  }

  /**
   * DELETE /models/{name}, bounded by unregister_model_timeout: waits for a load in progress (and
   * stops it when the bound is reached), drains admitted requests, kills the workers and waits for
   * them to exit. When the bound was reached the model is gone all the same, and the answer is 408.
   * A name with only a remembered on-demand load failure has that failure forgotten.
   */
  async unload(name: string): Promise<void> {
    const { config, registry, log } = this.deps;
    const { clock } = this.deps;
    const boundMs = config.unregisterModelTimeoutSeconds * 1000;
    const deadline = clock.now() + boundMs;
    const entry = registry.current(name);
    if (!entry || !(entry.serving || entry.phase === 'loading')) {
      if (!this.deps.onDemand.forgetFailure(name)) throw modelNotFound(name);
      log(
        `[${name}] its remembered load failure was forgotten (DELETE /models/${name}): the next invoke loads it again`,
      );
      return;
    }
    let late = false;
    const t0 = performance.now();
    const locking = this.#locks.acquire(name);
    let unlock = await within(locking, boundMs, null, clock);
    if (!unlock) {
      late = true;
      // Still loading at the bound: stop the load, which then gives the lock up at once.
      entry.abortLoad.abort(
        new MmeError(
          'MME_ERR_MODEL_CONFLICT',
          `Model ${name} was unloaded (DELETE /models/${name}) before its load finished.`,
        ),
      );
      unlock = await locking;
    }
    try {
      if (registry.current(name) !== entry || !entry.serving) {
        if (late)
          throw this.#unloadTimeout(name, 'it was still loading; the load was stopped and nothing is left of it');
        throw modelNotFound(name);
      }
      entry.to('draining');
      if (!(await entry.whenIdle(deadline - clock.now()))) {
        late = true;
        log(
          `[${name}] unload: requests still running after ${config.unregisterModelTimeoutSeconds} s (unregister_model_timeout); stopping its workers`,
        );
      }
      entry.to('stopping');
      await this.#release(
        entry,
        new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was unloaded before this request finished.`),
      );
    } finally {
      unlock();
    }
    this.deps.events.unloaded(name, Math.round((performance.now() - t0) * 1000));
    log(`[${name}] unloaded${late ? ' after unregister_model_timeout' : ''}`);
    if (late)
      throw this.#unloadTimeout(
        name,
        'requests were still running; they were stopped, its workers killed and its files removed',
      );
  }

  #unloadTimeout(name: string, what: string): MmeError {
    return new MmeError(
      'MME_ERR_UNLOAD_TIMEOUT',
      `Timed out while cleaning resources: ${name}. The unload took longer than unregister_model_timeout (${this.deps.config.unregisterModelTimeoutSeconds} s): ${what}. The model is unloaded.`,
    );
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
      const e = this.deps.registry.current(name);
      if (!e?.model || !e.serving) throw modelNotFound(name);
      const model = e.model;
      const added =
        processCount({ preloadModel: model.settings.preloadModel, minWorkers: min }) - processCount(model.settings);
      const reserved = added > 0 ? await this.#reserveWorkers(e, added, { kind: 'scale', workers: min }) : 0;
      // The reservation stands until the new workers are measured.
      scaling = model.scale(min, max).finally(async () => {
        await model.refreshMemory();
        e.unreserve(reserved);
      });
      this.deps.events.workers(name, model.workerTarget);
      if (synchronous) await scaling;
    } finally {
      unlock();
    }
    if (!synchronous)
      scaling.catch((err: MmeError) => this.deps.log(`[${name}] scaling to ${min} worker(s) failed: ${err.message}`));
  }

  /** One autoscale round of a serving model (autoscale/autoscale-step.ts). */
  autoscale(entry: Registration): Promise<void> {
    const { registry, events, log } = this.deps;
    return autoscaleStep(entry, {
      tryLock: (name) => this.#locks.tryAcquire(name),
      current: (name) => registry.current(name),
      closing: () => this.closing,
      reserve: (e, d, to, purpose) =>
        to
          ? this.#reserve(e, this.#estimator.estimate(e.artifact!.onnxBytes, d.target, to), purpose)
          : this.#reserveWorkers(e, 1, purpose),
      autoscaled: (name, direction, reason) => events.autoscaled(name, direction, reason),
      workers: (name, n) => events.workers(name, n),
      log,
    });
  }

  /** Reserves what `added` more workers of the model cost (as its workers measure now, else the estimate); returns the bytes reserved. */
  async #reserveWorkers(e: Registration, added: number, purpose: Purpose): Promise<number> {
    const model = e.model!;
    const measured = await model.refreshMemory();
    const live = model.workers.length;
    const perWorker =
      live > 0 && measured > 0 ? measured / live : this.#estimator.estimate(e.artifact!.onnxBytes, 1, model.mode);
    return this.#reserve(e, Math.ceil(added * perWorker), purpose);
  }

  async #reserve(e: Registration, bytes: number, purpose: Purpose): Promise<number> {
    await this.#admission.reserve(e, bytes, e.abortLoad.signal, purpose);
    return bytes;
  }

  /**
   * Shutdown, bounded: loads in progress are stopped at once; serving models drain for up to
   * `drainMs`, then their workers are killed. Whatever still runs after that is SIGKILLed, so this
   * resolves within drainMs plus the time to reap the processes. Counts the admitted requests that
   * finished in the drain and those cut off when their model's workers were stopped.
   */
  async close(drainMs: number): Promise<ShutdownCounts> {
    const counts: ShutdownCounts = { drained: 0, cutOff: 0 };
    this.closing = true;
    const { clock } = this.deps;
    const deadline = clock.now() + drainMs;
    const live = this.deps.registry.live;
    for (const e of live) if (e.phase === 'loading') e.abortLoad.abort(shuttingDown());
    const spares = this.deps.workers.closeSpares();
    const stopping = Promise.all([...live].map((e) => this.#shutdownEntry(e, deadline, counts)));
    if ((await within(stopping, drainMs + kReapBoundMs, 'late' as const, clock)) === 'late') {
      this.deps.log(
        `shutdown: models still stopping after ${Math.round((drainMs + kReapBoundMs) / 1000)} s; killing every worker process`,
      );
      const { live } = this.deps.workers.processes;
      for (const h of live) h.kill('stopped');
      await within(Promise.all([...live].map((h) => h.exited)), kReapBoundMs, null, clock);
    }
    await spares;
    await this.deps.workers.closeHosts();
    this.deps.repository?.close();
    return counts;
  }

  async #shutdownEntry(entry: Registration, deadline: number, counts: ShutdownCounts): Promise<void> {
    const unlock = await this.#locks.acquire(entry.name);
    try {
      if (!entry.serving) return; // a load that was stopped, or an unload or eviction that finished first
      entry.to('draining');
      const admitted = entry.active;
      await entry.whenIdle(deadline - this.deps.clock.now());
      counts.cutOff += entry.active;
      counts.drained += admitted - entry.active;
      entry.to('stopping');
      await this.#release(entry, shuttingDown());
    } finally {
      unlock();
    }
  }
}
