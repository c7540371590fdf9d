/**
 * The operations that change a registration: load, unload, scale, eviction, idle unload, shutdown.
 * Each holds the name's lock, so none acts on a state another is halfway through changing. A name
 * is claimed synchronously before any work starts: of 20 concurrent loads of one name, 19 get 409.
 */
import { performance } from 'node:perf_hooks';
import { resolveArtifact } from '../../artifacts/model-artifact';
import { type DirReads, dirReadsFor } from '../../artifacts/dir-reads';
import { repositoryArtifact } from '../../repository/artifact';
import { MmeError } from '../../errors';
import type { StepDeps } from '../autoscale/autoscale-rounds';
import { KeyedLock } from '../../util/keyed-lock';
import { Semaphore } from '../../util/semaphore';
import { mb } from '../../util/mb';
import { deadlineSignal } from '../../util/deadline-signal';
import { within } from '../../util/within';
import { Admission, type Purpose } from '../cache/admission';
import type { ClassedPolicy } from '../cache/eviction-classes';
import { kModeTraits } from '../hosts/host-policy';
import { MemoryEstimator, memoryBudgetBytes, memoryLimitBytes } from '../cache/memory-budget';
import { Model, type ModelContext } from './model';
import { limitBytes } from '../processes/limit-enforcement';
import { Registration } from './registration';
import { checkModelName, modelNotFound, shuttingDown } from './model-names';
import { processCount, resolveSettings, type LoadRequest } from './model-settings';
import { OnDemandLoader, type OnDemandDeps } from './on-demand';

export interface OperationsDeps extends ModelContext, OnDemandDeps {
  cacheDir: string;
  policy: ClassedPolicy;
}

const elapsedMicros = (t0: number) => Math.round((performance.now() - t0) * 1000);
const cutOff = (name: string, how: string) =>
  new MmeError('MME_ERR_SHUTTING_DOWN', `Model ${name} was ${how} before this request finished.`);

/**
 * max_concurrent_loads: acquire(fromRepository, signal) resolves with the permit's release; a wait
 * `signal` ends leaves the line with its reason. A fetch from model_repository goes at the store's
 * pace, so repository loads hold at most every permit but one: a local load always finds one.
 */
export function loadPermits(permits: number) {
  const [all, repository] = [new Semaphore(permits), new Semaphore(Math.max(1, permits - 1))];
  return async (fromRepository: boolean, signal: AbortSignal): Promise<() => void> => {
    const releaseShare = fromRepository ? await repository.acquire(signal) : () => {};
    try {
      const release = await all.acquire(signal);
      return () => {
        release();
        releaseShare();
      };
    } catch (err) {
      releaseShare();
      throw err;
    }
  };
}

export class LifecycleOperations {
  readonly #locks = new KeyedLock();
  readonly #admission: Admission<Registration>;
  readonly #estimator = new MemoryEstimator();
  readonly #permit: ReturnType<typeof loadPermits>;
  /** Synchronous when every model root is on a local file system (decided once, at the first load). */
  #readsChosen: Promise<DirReads> | null = null;
  readonly budgetBytes: number;
  /** An invoke's route to its model, which loads it from model_store or model_repository through here. */
  readonly onDemand: OnDemandLoader;
  /** ModelManager.close() has begun: new requests are refused while admitted ones finish. */
  closing = false;

  constructor(private readonly deps: OperationsDeps) {
    const { config, registry } = deps;
    this.#permit = loadPermits(config.maxConcurrentLoads);
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
      releasePermit = await this.#permit(repository !== null, waiting.signal);
      const opts = { cacheDir: this.deps.cacheDir, roots: config.modelRoots, handler: req.handler };
      // MMS resolves a relative url against model_store; errors name the url as the client sent it.
      const artifact = repository
        ? await repositoryArtifact(repository, name, opts, abort, { seconds: waitSeconds, timers: clock })
        : await resolveArtifact(req.url, {
            ...opts,
            store: config.modelStore,
            reads: await (this.#readsChosen ??= dirReadsFor(config.modelRoots)),
          });
      entry.artifact = artifact;
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

  /** Stops the entry's workers, frees its files and GPUs, and retires it (phase stopping → gone). */
  async #release(entry: Registration, err: MmeError): Promise<void> {
    entry.to('stopping');
    this.deps.policy.remove(entry.name);
    await entry.model?.stop(err);
    this.deps.registry.release(entry);
    await entry.artifact?.dispose();
    entry.unreserve();
    entry.to('gone');
    this.deps.events.sink.modelWorkers?.(entry.name, 0);
  }

  /**
   * Unloads `entry` (its lock held; DELETE, eviction, idle) begun at `t0`: drains it for up to
   * `drainMs`, else logs `late` and cuts its requests off with `err`; false when it did.
   */
  async #unload(entry: Registration, drainMs: number, err: MmeError, late: string, t0: number): Promise<boolean> {
    const drained = await entry.drain(drainMs);
    if (!drained) this.deps.log(`[${entry.name}] ${late}`);
    await this.#release(entry, err);
    this.deps.events.sink.modelUnloaded?.(entry.name, elapsedMicros(t0));
    this.deps.events.sink.loadedModelCount?.(this.deps.registry.servingCount());
    return drained;
  }

  /** Drains (bounded) and stops an eviction victim, whose lock the caller holds. */
  async #evict(entry: Registration, why: string): Promise<void> {
    const { name, idleMs } = entry;
    const { config, events, log } = this.deps;
    const freed = entry.model!.memoryBytes;
    const seconds = config.evictionDrainTimeoutSeconds;
    const late = `eviction: requests still running after ${seconds} s (eviction_drain_timeout); stopping anyway`;
    await this.#unload(entry, seconds * 1000, cutOff(name, 'evicted to make room'), late, performance.now());
    events.stats.evictions++;
    events.sink.evicted?.(name, idleMs);
    log(`[${name}] evicted ${why} (idle ${Math.round(idleMs / 1000)} s, freed ${mb(freed)})`);
  }

  /** Unloads `entry`, idle for its idle_unload_seconds: no request holds it, so none is cut off. */
  async #unloadIdle(entry: Registration, seconds: number): Promise<void> {
    const unlock = await this.#locks.acquire(entry.name);
    try {
      const idleMs = entry.idleMs;
      // A request, or an operation that unloaded it, may have come while it waited for the lock.
      if (!entry.serving || idleMs < seconds * 1000) return entry.checkIdle();
      const why = `idle for ${Math.round(idleMs / 1000)} s (idle_unload_seconds=${seconds})`;
      await this.#unload(entry, 0, shuttingDown(), '', performance.now());
      this.deps.events.sink.idleUnloaded?.(entry.name);
      this.deps.log(`[${entry.name}] unloaded: ${why}`);
    } finally {
      unlock();
    }
  }

  /** DELETE /models/{name}: past unregister_model_timeout (a load is stopped) it is gone all the same, with 408. */
  async unload(name: string): Promise<void> {
    const { config, registry, log, clock } = this.deps;
    const seconds = config.unregisterModelTimeoutSeconds;
    const deadline = clock.now() + seconds * 1000;
    const entry = registry.current(name);
    if (!entry || !registry.registered(name)) {
      if (!this.onDemand.forgetFailure(name)) throw modelNotFound(name);
      log(
        `[${name}] its remembered load failure was forgotten (DELETE /models/${name}): the next invoke loads it again`,
      );
      return;
    }
    const timedOut = (what: string) =>
      new MmeError(
        'MME_ERR_UNLOAD_TIMEOUT',
        `Timed out while cleaning resources: ${name}. The unload took longer than unregister_model_timeout (${seconds} s): ${what}. The model is unloaded.`,
      );
    const t0 = performance.now();
    const locking = this.#locks.acquire(name);
    let unlock = await within(locking, seconds * 1000, null, clock);
    let late = unlock === null;
    if (!unlock) {
      // Still loading at the bound: stop the load, which then gives the lock up at once.
      const stopped = `Model ${name} was unloaded (DELETE /models/${name}) before its load finished.`;
      entry.abortLoad.abort(new MmeError('MME_ERR_MODEL_CONFLICT', stopped));
      unlock = await locking;
    }
    try {
      if (registry.current(name) !== entry || !entry.serving)
        throw late
          ? timedOut('it was still loading; the load was stopped and nothing is left of it')
          : modelNotFound(name);
      const stopping = `unload: requests still running after ${seconds} s (unregister_model_timeout); stopping its workers`;
      if (!(await this.#unload(entry, deadline - clock.now(), cutOff(name, 'unloaded'), stopping, t0))) late = true;
    } finally {
      unlock();
    }
    log(`[${name}] unloaded${late ? ' after unregister_model_timeout' : ''}`);
    if (late)
      throw timedOut('requests were still running; they were stopped, its workers killed and its files removed');
  }

  /** Scales once a load in progress is over (it holds the lock); added workers must fit the budget first, else 507. */
  async scale(name: string, min: number, max: number, synchronous: boolean): Promise<void> {
    const unlock = await this.#locks.acquire(name);
    let scaling: Promise<void>;
    try {
      const model = this.deps.registry.get(name);
      const e = this.deps.registry.current(name)!;
      const added = processCount({ ...model.settings, minWorkers: min }) - processCount(model.settings);
      const reserved = added > 0 ? await this.#reserve(e, { kind: 'scale', workers: min }, added) : 0;
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
        this.#reserve(e, purpose, 1, to ? this.#estimator.estimate(e.artifact!.onnxBytes, d.target, to) : undefined),
      autoscaled: (name, direction, reason) => events.sink.autoscaleEvent?.(name, direction, reason),
      workers: (name, n) => events.sink.modelWorkers?.(name, n),
      log,
    };
  }

  /** Reserves `bytes`, else what `added` more workers cost: as its workers measure now, else the estimate. */
  async #reserve(e: Registration, purpose: Purpose, added: number, bytes?: number): Promise<number> {
    const model = e.model!;
    if (bytes === undefined) {
      const [measured, live] = [await model.refreshMemory(), model.workers.length];
      const estimate = () => this.#estimator.estimate(e.artifact!.onnxBytes, 1, model.mode);
      bytes = Math.ceil(added * (live > 0 && measured > 0 ? measured / live : estimate()));
    }
    await this.#admission.reserve(e, bytes, e.abortLoad.signal, purpose);
    return bytes;
  }

  /** For ModelManager.close: stops a load at once, drains (under the lock) until `deadline`, then stops; counts requests. */
  async shutdown(entry: Registration, deadline: number, counts: { drained: number; cutOff: number }): Promise<void> {
    if (entry.phase === 'loading') entry.abortLoad.abort(shuttingDown());
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
