/**
 * The operations that change a registration: load, unload, scale, eviction, idle unload, shutdown.
 * Each holds the name's lock, so none acts on a state another is halfway through changing. A name
 * is claimed synchronously before any work starts: of 20 concurrent loads of one name, 19 get 409.
 */
import { performance } from 'node:perf_hooks';
import { resolveArtifact } from '../../artifacts/model-artifact';
import { type DirReads, dirReadsFor } from '../../artifacts/dir-reads';
import { repositoryArtifact } from '../../repository/artifact';
import type { ModelRepository } from '../../repository/repository';
import { MmeError } from '../../errors';
import type { StepDeps } from '../autoscale/autoscale-rounds';
import { KeyedLock } from '../../util/keyed-lock';
import { mb } from '../../util/mb';
import { deadlineSignal } from '../../util/deadline-signal';
import { within } from '../../util/within';
import { Admission, type Purpose } from '../cache/admission';
import type { ClassedPolicy } from '../cache/eviction-classes';
import { kModeTraits } from '../hosts/host-policy';
import { MemoryEstimator, memoryBudgetBytes, memoryLimitBytes } from '../cache/memory-budget';
import { Model, type ModelContext } from './model';
import { LoadPermits } from './load-permits';
import { limitBytes } from '../processes/limit-enforcement';
import { Registration } from './registration';
import { checkModelName, modelNotFound, shuttingDown, unloadTimeout } from './model-names';
import { processCount, resolveSettings, type LoadRequest } from './model-settings';
import { OnDemandLoader, type OnDemandDeps } from './on-demand';

export interface OperationsDeps extends ModelContext, OnDemandDeps {
  cacheDir: string;
  policy: ClassedPolicy;
}

const elapsedMicros = (t0: number) => Math.round((performance.now() - t0) * 1000);

export class LifecycleOperations {
  readonly #locks = new KeyedLock();
  readonly #admission: Admission<Registration>;
  readonly #estimator = new MemoryEstimator();
  /** max_concurrent_loads: a load holds one of them while it runs. */
  readonly #permits: LoadPermits;
  /** Synchronous when every model root is on a local file system (decided once, at the first load). */
  #readsChosen: Promise<DirReads> | null = null;
  readonly budgetBytes: number;
  /** An invoke's route to its model, which loads it from model_store or model_repository through here. */
  readonly onDemand: OnDemandLoader;
  /** ModelManager.close() has begun: new requests are refused while admitted ones finish. */
  closing = false;

  constructor(private readonly deps: OperationsDeps) {
    const { config, registry } = deps;
    this.#permits = new LoadPermits(config.maxConcurrentLoads);
    const startLoad = (name: string, url: string) => this.#load({ modelName: name, url }, true);
    this.onDemand = new OnDemandLoader(deps, () => this.closing, startLoad);
    const { modelMemoryBudgetBytes: budget, modelMemoryReserveBytes: reserve } = config;
    this.budgetBytes = memoryBudgetBytes(budget, reserve, memoryLimitBytes());
    this.#admission = new Admission({
      budgetBytes: this.budgetBytes,
      maxLoadedModels: config.maxLoadedModels,
      evicts: config.modelCache,
      policy: deps.policy,
      clock: deps.clock,
      tally: registry,
      fixedBytes: () => deps.workers.hosts?.baseBytes ?? 0,
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
    if (this.deps.registry.registered(name))
      throw new MmeError('MME_ERR_MODEL_CONFLICT', `Model ${name} is already registered.`);
    this.onDemand.forgetFailure(name);
    const work = this.#load(req, false);
    if (req.synchronous !== false) return work.then(() => 'loaded' as const);
    work.catch(() => {}); // logged by Registration.loadFailed
    return 'accepted';
  }

  /** Claims the name before its first await (a leaving registration of it finishes first, under the lock), then loads. */
  async #load(req: LoadRequest, onDemand: boolean): Promise<void> {
    const { config, registry, events, log, clock } = this.deps;
    const name = req.modelName;
    const entry = new Registration(name, req.url, onDemand, req.loadedAtStartup ?? false, clock);
    registry.claim(entry);
    const abort = entry.abortLoad.signal;
    const unlock = await this.#locks.acquire(name);
    // The waits for a load permit and for room end at the load's own load_timeout, whatever the loads ahead do.
    const waitSeconds = req.loadTimeout ?? config.modelLoadTimeoutSeconds;
    const waiting = deadlineSignal(
      abort,
      waitSeconds * 1000,
      () =>
        new MmeError(
          'MME_ERR_LOAD_WAIT_TIMEOUT',
          `Model ${name} waited ${waitSeconds} s (its load_timeout) for a load permit (max_concurrent_loads) or for room (max_loaded_models, the memory budget) behind other loads, and gave up; nothing of it is left. Retry later, or load it with a longer load_timeout.`,
        ),
      clock,
    );
    let releasePermit = () => {};
    const t0 = performance.now();
    try {
      // Only the on-demand loader makes a repository url: a client's s3:// url is never fetched.
      const repository = onDemand && req.url === this.deps.repository?.urlOf(name) ? this.deps.repository : null;
      releasePermit = await this.#permits.acquire(repository !== null, waiting.signal);
      const artifact = await this.#resolve(req, repository, waitSeconds, abort);
      entry.resolved(artifact);
      abort.throwIfAborted();
      const settings = resolveSettings(req, artifact, config);
      const [processes, mode, limit] = [processCount(settings), settings.workerMode, limitBytes(settings)];
      const bytes = limit ?? this.#estimator.estimate(artifact.onnxBytes, processes, mode);
      await this.#admission.reserve(entry, bytes, waiting.signal);
      waiting.done();
      const model = new Model(entry, settings, artifact, this.deps);
      entry.built(model);
      await model.start(abort);
      const loadMicros = elapsedMicros(t0);
      entry.unreserve();
      entry.to('ready');
      if (limit === null) this.#estimator.learn(artifact.onnxBytes, processes, mode, model.memoryBytes);
      this.deps.policy.admit(name, model.memoryBytes, loadMicros, clock.now(), settings);
      const idleSeconds = settings.idleUnloadSeconds;
      if (idleSeconds > 0) entry.unloadWhenIdle(idleSeconds * 1000, () => void this.#unloadIdle(entry, idleSeconds));
      events.stats.loads++;
      events.sink.modelLoaded?.(name, loadMicros, true);
      events.sink.loadedModelCount?.(registry.servingCount());
      events.sink.modelWorkers?.(name, model.workerTarget);
      const where = kModeTraits[mode].ownProcess
        ? `with ${model.workers.length} worker(s)`
        : `in shared host(s) ${model.workers.map((w) => w.sharedHostId).join(', ')}`;
      log(`[${name}] loaded from ${req.url} ${where} in ${Math.round(loadMicros / 1000)} ms, ${mb(model.memoryBytes)}`);
    } catch (thrown) {
      const err = entry.loadFailed(thrown, log);
      // Counted before its release: whoever waited for it reads the count on its answer.
      events.stats.loadFailures++;
      // A failed load leaves nothing behind: no entry, no process, no extracted files.
      await this.#release(entry, err);
      if (entry.onDemand) this.onDemand.rememberFailure(name, err);
      // Its time covers the cleanup too.
      events.sink.modelLoaded?.(name, elapsedMicros(t0), false);
      throw err;
    } finally {
      waiting.done();
      releasePermit();
      unlock();
    }
  }

  /** The load's files: from model_repository (`repository`), else from its url. */
  async #resolve(req: LoadRequest, repository: ModelRepository | null, seconds: number, abort: AbortSignal) {
    const { config, cacheDir, clock } = this.deps;
    const opts = { cacheDir, roots: config.modelRoots, handler: req.handler };
    if (repository) return repositoryArtifact(repository, req.modelName, opts, abort, { seconds, timers: clock });
    // MMS resolves a relative url against model_store; errors name the url as the client sent it.
    return resolveArtifact(req.url, {
      ...opts,
      store: config.modelStore,
      reads: await (this.#readsChosen ??= dirReadsFor(config.modelRoots)),
    });
  }

  /** Stops the entry's workers, frees its files and GPUs, and retires it (phase stopping → gone). */
  async #release(entry: Registration, err: MmeError): Promise<void> {
    entry.to('stopping');
    this.deps.policy.remove(entry.name);
    await entry.model?.stop(err);
    this.deps.registry.release(entry);
    await entry.artifact?.dispose();
    entry.unreserve();
    entry.to('gone');
    this.deps.registry.forget(entry);
    this.deps.events.sink.modelWorkers?.(entry.name, 0);
  }

  /** Reports an unload (DELETE, eviction, idle) that began at `t0`. */
  #unloaded(name: string, t0: number): void {
    this.deps.events.sink.modelUnloaded?.(name, elapsedMicros(t0));
    this.deps.events.sink.loadedModelCount?.(this.deps.registry.servingCount());
  }

  /** Drains (bounded) and stops an eviction victim, whose lock the caller holds. */
  async #evict(entry: Registration, why: string): Promise<void> {
    const { name } = entry;
    const { config, log } = this.deps;
    const freed = entry.model!.memoryBytes;
    const idleMs = entry.idleMs;
    const t0 = performance.now();
    if (!(await entry.drain(config.evictionDrainTimeoutSeconds * 1000)))
      log(
        `[${name}] eviction: requests still running after ${config.evictionDrainTimeoutSeconds} s (eviction_drain_timeout); stopping anyway`,
      );
    await this.#release(
      entry,
      new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was evicted to make room before this request finished.`),
    );
    this.deps.events.stats.evictions++;
    this.deps.events.sink.evicted?.(name, idleMs);
    this.#unloaded(name, t0);
    log(`[${name}] evicted ${why} (idle ${Math.round(idleMs / 1000)} s, freed ${mb(freed)})`);
  }

  /** Unloads `entry`, idle for its idle_unload_seconds: no request holds it, so none is cut off. */
  async #unloadIdle(entry: Registration, seconds: number): Promise<void> {
    const unlock = await this.#locks.acquire(entry.name);
    try {
      const idleMs = entry.idleMs;
      // A request, or an operation that unloaded it, may have come while it waited for the lock.
      if (!entry.serving || idleMs < seconds * 1000) return entry.checkIdle();
      const t0 = performance.now();
      const why = `idle for ${Math.round(idleMs / 1000)} s (idle_unload_seconds=${seconds})`;
      entry.to('draining');
      await this.#release(entry, shuttingDown());
      this.deps.events.sink.idleUnloaded?.(entry.name);
      this.#unloaded(entry.name, t0);
      this.deps.log(`[${entry.name}] unloaded: ${why}`);
    } finally {
      unlock();
    }
  }

  /** DELETE /models/{name}: past unregister_model_timeout (a load is stopped) it is gone all the same, with 408. */
  async unload(name: string): Promise<void> {
    const { config, registry, log, clock } = this.deps;
    const boundMs = config.unregisterModelTimeoutSeconds * 1000;
    const deadline = clock.now() + boundMs;
    const entry = registry.current(name);
    if (!entry || !registry.registered(name)) {
      if (!this.onDemand.forgetFailure(name)) throw modelNotFound(name);
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
      const stopped = `Model ${name} was unloaded (DELETE /models/${name}) before its load finished.`;
      entry.abortLoad.abort(new MmeError('MME_ERR_MODEL_CONFLICT', stopped));
      unlock = await locking;
    }
    try {
      if (registry.current(name) !== entry || !entry.serving) {
        if (late) throw unloadTimeout(name, config, 'loading');
        throw modelNotFound(name);
      }
      if (!(await entry.drain(deadline - clock.now()))) {
        late = true;
        log(
          `[${name}] unload: requests still running after ${config.unregisterModelTimeoutSeconds} s (unregister_model_timeout); stopping its workers`,
        );
      }
      await this.#release(
        entry,
        new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was unloaded before this request finished.`),
      );
    } finally {
      unlock();
    }
    this.#unloaded(name, t0);
    log(`[${name}] unloaded${late ? ' after unregister_model_timeout' : ''}`);
    if (late) throw unloadTimeout(name, config, 'running');
  }

  /** Scales once a load in progress is over (it holds the lock); added workers must fit the budget first, else 507. */
  async scale(name: string, min: number, max: number, synchronous: boolean): Promise<void> {
    const unlock = await this.#locks.acquire(name);
    let scaling: Promise<void>;
    try {
      const model = this.deps.registry.get(name);
      const e = this.deps.registry.current(name)!;
      const added = processCount({ ...model.settings, minWorkers: min }) - processCount(model.settings);
      const reserved = added > 0 ? await this.#reserveWorkers(e, added, { kind: 'scale', workers: min }) : 0;
      // The reservation stands until the new workers are measured.
      scaling = model.scale(min, max).finally(async () => {
        await model.refreshMemory();
        e.unreserve(reserved);
      });
      this.deps.events.sink.modelWorkers?.(name, model.workerTarget);
      if (synchronous) await scaling;
    } finally {
      unlock();
    }
    if (!synchronous)
      scaling.catch((err: MmeError) => this.deps.log(`[${name}] scaling to ${min} worker(s) failed: ${err.message}`));
  }

  /** What the autoscale rounds act through. */
  autoscaling(): StepDeps<Registration> {
    const { registry, events, log } = this.deps;
    return {
      tryLock: (name) => this.#locks.tryAcquire(name),
      current: (name) => registry.current(name),
      reserve: (e, d, to, purpose) =>
        to
          ? this.#reserve(e, this.#estimator.estimate(e.artifact!.onnxBytes, d.target, to), purpose)
          : this.#reserveWorkers(e, 1, purpose),
      autoscaled: (name, direction, reason) => events.sink.autoscaleEvent?.(name, direction, reason),
      workers: (name, n) => events.sink.modelWorkers?.(name, n),
      log,
    };
  }

  /** What `added` more workers cost, as its workers measure now, else the estimate. */
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

  /** Drains and stops `entry` (under its lock) by `deadline`, for ModelManager.close: counts its requests. */
  async shutdown(entry: Registration, deadline: number, counts: { drained: number; cutOff: number }): Promise<void> {
    const unlock = await this.#locks.acquire(entry.name);
    try {
      if (!entry.serving) return; // a load that was stopped, or an unload or eviction that finished first
      const admitted = entry.active;
      await entry.drain(deadline - this.deps.clock.now());
      counts.cutOff += entry.active;
      counts.drained += admitted - entry.active;
      await this.#release(entry, shuttingDown());
    } finally {
      unlock();
    }
  }
}
