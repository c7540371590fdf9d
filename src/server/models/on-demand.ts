/**
 * The route from an invoke to a loaded model (Triton's repository manager role): a hit, a wait for
 * a load in progress, or, with the self-managed cache on, a load from model_store (or
 * model_repository) started for it.
 * Concurrent invokes share one load; a model whose on-demand load failed recently answers with that
 * failure instead of loading again (ModelMesh's lesson: a broken model must not be reloaded on
 * every request).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ServerConfig } from '../../config/types';
import { MmeError, type ErrorCode } from '../../errors';
import type { Clock } from '../../util/clock';
import { within } from '../../util/within';
import type { ModelRepository } from '../../repository/repository';
import type { EvictionPolicy } from '../cache/eviction-policy';
import type { LifecycleEvents } from './lifecycle-events';
import type { Registration } from './registration';
import { checkModelName, isModelName, modelNotFound, shuttingDown } from './model-names';
import type { ModelRegistry } from './registry';

export interface OnDemandDeps {
  config: ServerConfig;
  registry: ModelRegistry;
  policy: EvictionPolicy;
  events: LifecycleEvents;
  /** model_repository, where on-demand loads look after model_store; null when not configured. */
  repository: ModelRepository | null;
  /** Shutdown has begun. */
  closing(): boolean;
  /** Claims the name and starts its load from `url` (model_store relative); settles when the load does. */
  startLoad(name: string, url: string): Promise<void>;
  /** What the negative cache's expiry, the policy's time and load_wait_timeout run on: the server's clock. */
  clock: Clock;
}

/**
 * Failures that a retry in a minute would meet again: the artifact is unusable, not there, makes its
 * worker exit or hang while loading, or its store is down (a retry per invoke would hammer it).
 */
const kModelFailures: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'MME_ERR_INVALID_MODEL',
  'MME_ERR_MODEL_NOT_FOUND',
  'MME_ERR_LOAD_FAILED',
  'MME_ERR_LOAD_TIMEOUT',
  'MME_ERR_REPOSITORY_UNAVAILABLE',
  'MME_ERR_REPOSITORY_TIMEOUT',
]);

/** A failed on-demand load, answered instead of loading again until `until` or a change of `files`. */
interface RememberedFailure {
  error: MmeError;
  until: number;
  /** The model's files in model_store when it failed (filesSignature); null when it came from model_repository. */
  files: string | null;
}

/** A store entry with more files than this is not watched for changes: its failure is remembered by time only. */
const kMaxWatchedFiles = 1000;

/**
 * Path, size and mtime of every file under `target` (itself when a file), in one string: a fixed
 * handler or a new model.onnx changes it, even when written in place (a directory's own mtime moves
 * only when an entry is added or removed).
 */
function filesSignature(target: string): string | null {
  const parts: string[] = [];
  const visit = (p: string, rel: string): boolean => {
    let st: fs.Stats;
    try {
      st = fs.statSync(p);
    } catch {
      parts.push(`${rel} gone`);
      return true;
    }
    if (!st.isDirectory()) return parts.push(`${rel} ${st.size} ${st.mtimeMs}`) <= kMaxWatchedFiles;
    return fs
      .readdirSync(p)
      .sort()
      .every((e) => visit(path.join(p, e), `${rel}/${e}`));
  };
  return visit(target, '.') ? parts.join('\n') : null;
}

export class OnDemandLoader {
  readonly #failedLoads = new Map<string, RememberedFailure>();

  constructor(private readonly deps: OnDemandDeps) {}

  /**
   * Whether an invoke for `name` can be served: loaded, loading, or (cache on) in model_store. With
   * model_repository any valid name may be there: only the load can tell, and a 404 is cached.
   */
  knows(name: string): boolean {
    const { registry, config, repository } = this.deps;
    return (
      registry.current(name) !== undefined ||
      (config.modelCache && isModelName(name) && (repository !== null || this.#findInStore(name) !== null))
    );
  }

  /**
   * An explicit load or unload of `name` starts afresh: a failure remembered for it no longer
   * answers. True when there was one.
   */
  forgetFailure(name: string): boolean {
    return this.#failedLoads.delete(name);
  }

  /**
   * An on-demand load of `name` failed with `err`: invokes get it for load_failure_cache_seconds,
   * when the failure is the model's own or its store's. A failure of the instance (memory short now,
   * a worker killed by someone else, shutdown) may be gone on the next try, so it is not remembered.
   */
  rememberFailure(name: string, err: MmeError): void {
    const seconds = this.deps.config.loadFailureCacheSeconds;
    if (seconds > 0 && kModelFailures.has(err.code))
      this.#failedLoads.set(name, {
        error: err,
        until: this.deps.clock.now() + seconds * 1000,
        files: this.#files(name),
      });
  }

  /**
   * The registration serving `name`, held (release() it): at once when loaded (a cache hit); after
   * waiting for a load in progress; or, with the cache on, after loading it from model_store
   * (single-flight: concurrent invokes share one load). A request that waited for a load that
   * failed gets that load's error. Waits at most load_wait_timeout, jittered, then 503 + Retry-After.
   */
  async acquire(name: string, wait?: { micros: number }): Promise<Registration> {
    const { config, registry, events } = this.deps;
    const first = registry.current(name);
    if (first?.serving) {
      events.lookup(name, true);
      this.deps.policy.touch(name, this.deps.clock.now());
      first.hold();
      return first;
    }
    if (this.deps.closing()) throw shuttingDown();
    if (!first && !config.modelCache) throw modelNotFound(name);
    checkModelName(name);
    const t0 = performance.now();
    let missed = false;
    const boundMs = config.loadWaitTimeoutSeconds * 1000 * (1 + Math.random());
    const deadline = this.deps.clock.now() + boundMs;
    for (;;) {
      const e = registry.current(name);
      if (e?.serving) {
        // No touch: the policy counts the load itself as the first use.
        this.#recordWait(name, t0, wait);
        e.hold();
        return e;
      }
      if (this.deps.closing()) throw shuttingDown();
      if (!e) {
        if (!config.modelCache || !this.#loadOnDemand(name)) throw modelNotFound(name);
        continue;
      }
      if (e.phase !== 'loading' && !config.modelCache) throw modelNotFound(name);
      // A miss is an invoke that waits for a load, counted once; a name nobody has (404) is none.
      if (!missed) {
        missed = true;
        events.lookup(name, false);
      }
      // Loading: wait for that load, holding the model from the instant it is ready. Leaving: wait
      // until it is gone, then load it again.
      const loading = e.phase === 'loading';
      const giveUp = loading ? e.holdWhenReady() : null;
      const settled = loading ? e.loadSettled : e.gone.then(() => null);
      const outcome = await within(settled, deadline - this.deps.clock.now(), 'timeout' as const, this.deps.clock);
      if (outcome === true) {
        this.#recordWait(name, t0, wait);
        return e;
      }
      if (outcome === 'timeout') {
        giveUp?.();
        this.#recordWait(name, t0, wait);
        const retryAfter = Math.max(1, Math.ceil(config.loadWaitTimeoutSeconds));
        throw new MmeError(
          'MME_ERR_MODEL_LOADING',
          `Model ${name} is still loading after ${Math.round(boundMs / 1000)} s; the load continues. Retry after ${retryAfter} s.`,
          { headers: { 'Retry-After': String(retryAfter) } },
        );
      }
      if (outcome === false && e.loadError) throw e.loadError;
    }
  }

  /** `wait`, the caller's, gets the same figure: its request's overhead leaves it out. */
  #recordWait(name: string, t0: number, wait: { micros: number } | undefined): void {
    const micros = Math.round((performance.now() - t0) * 1000);
    if (wait) wait.micros = micros;
    this.deps.events.waited(name, micros);
  }

  /**
   * Starts loading `name` from model_store if it is there, else from model_repository (which
   * answers 404 when it has none); false when neither can have it. A model whose on-demand load
   * failed recently answers with that failure instead of loading again.
   */
  #loadOnDemand(name: string): boolean {
    const failed = this.#failedLoads.get(name);
    if (failed) {
      const left = failed.until - this.deps.clock.now();
      if (left >= 0 && this.#files(name) === failed.files) throw remembered(name, failed.error, left);
      this.#failedLoads.delete(name);
    }
    const url = this.#findInStore(name) ?? this.deps.repository?.urlOf(name);
    if (!url) return false;
    // The load logs its own failure; the invokes waiting for it get the error from the registration.
    this.deps.startLoad(name, url).catch(() => {});
    return true;
  }

  /** The signature of `name`'s files in model_store (null when it has none there: a repository model). */
  #files(name: string): string | null {
    const file = this.#findInStore(name);
    return file === null ? null : filesSignature(path.resolve(this.deps.config.modelStore!, file));
  }

  /**
   * `<name>/`, `<name>.tar.gz` or `<name>.tgz` in model_store, as a url relative to it (the name was
   * checked to be one safe path segment): what a load error shows, never the store's own path.
   */
  #findInStore(name: string): string | null {
    const store = this.deps.config.modelStore;
    if (!store) return null;
    for (const file of [name, `${name}.tar.gz`, `${name}.tgz`]) {
      if (fs.existsSync(path.resolve(store, file))) return file;
    }
    return null;
  }
}

/** The failure a remembered load answers with: the load's own, saying it is remembered, for how long, and how to retry now. */
function remembered(name: string, error: MmeError, leftMs: number): MmeError {
  const seconds = Math.max(1, Math.ceil(leftMs / 1000));
  return new MmeError(
    error.code,
    `Model ${name} failed to load recently and is not retried for ${seconds} more s (load_failure_cache_seconds); to retry now, fix its files in model_store or send DELETE /models/${name}. The failure: ${error.message}`,
    { status: error.status, headers: { ...error.headers, 'Retry-After': String(seconds) }, cause: error },
  );
}
