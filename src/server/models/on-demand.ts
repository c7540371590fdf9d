/**
 * The route from an invoke to a loaded model (Triton's repository manager role): a hit, a wait for
 * a load in progress, or, with the self-managed cache on, a load from model_store (or
 * model_repository) that concurrent invokes share. A model whose on-demand load failed recently
 * answers with that failure (ModelMesh's lesson: a broken model must not be reloaded per request).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ServerConfig } from '../../config/types';
import { MmeError, type ErrorCode } from '../../errors';
import type { Clock } from '../../util/clock';
import { within } from '../../util/within';
import type { ModelRepository } from '../../repository/repository';
import type { InvokeRequest } from '../../protocol/messages';
import type { InvokeResult, JobOptions } from '../jobs/job';
import type { EvictionPolicy } from '../cache/eviction-policy';
import type { LifecycleEvents } from './lifecycle-events';
import type { Registration } from './registration';
import { checkModelName, isModelName, modelNotFound, shuttingDown } from './model-names';
import type { ModelRegistry } from './registry';

/** What the loader reads; the lifecycle operations, which build it, have these too. */
export interface OnDemandDeps {
  config: ServerConfig;
  registry: ModelRegistry;
  policy: EvictionPolicy;
  events: LifecycleEvents;
  /** model_repository, where on-demand loads look after model_store; null when not configured. */
  repository: ModelRepository | null;
  clock: Clock;
}

/** Failures a retry in a minute would meet again (a retry per invoke would hammer a store that is down). */
const kModelFailures: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'MME_ERR_INVALID_MODEL',
  'MME_ERR_MODEL_NOT_FOUND',
  'MME_ERR_LOAD_FAILED',
  'MME_ERR_LOAD_TIMEOUT',
  'MME_ERR_REPOSITORY_UNAVAILABLE',
  'MME_ERR_REPOSITORY_TIMEOUT',
]);

/** A store entry with more files than this is not watched for changes: its failure is remembered by time only. */
const kMaxWatchedFiles = 1000;

/** Path, size and mtime of every file under `target`: a file rewritten in place changes it, a directory's mtime would not. */
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
  /** Failed on-demand loads, answered until `until` or a change of their `files` in model_store (null: from model_repository). */
  readonly #failedLoads = new Map<string, { error: MmeError; until: number; files: string | null }>();

  constructor(
    private readonly deps: OnDemandDeps,
    private readonly closing: () => boolean,
    /** Claims the name and starts its load from `url` (model_store relative); settles when the load does. */
    private readonly startLoad: (name: string, url: string) => Promise<void>,
  ) {}

  /** Loaded, loading, or (cache on) in model_store; with model_repository any valid name (a 404 there is cached). */
  knows(name: string): boolean {
    const { registry, config, repository } = this.deps;
    return (
      registry.current(name) !== undefined ||
      (config.modelCache && isModelName(name) && (repository !== null || this.#findInStore(name) !== null))
    );
  }

  /** An explicit load or unload of `name` starts afresh; true when a failure was remembered. */
  forgetFailure(name: string): boolean {
    return this.#failedLoads.delete(name);
  }

  /**
   * Invokes get `err` for load_failure_cache_seconds when the failure is the model's own or its
   * store's; one of the instance (memory short now, shutdown) may be gone on the next try.
   */
  rememberFailure(name: string, err: MmeError): void {
    const seconds = this.deps.config.loadFailureCacheSeconds;
    if (seconds <= 0 || !kModelFailures.has(err.code)) return;
    const until = this.deps.clock.now() + seconds * 1000;
    this.#failedLoads.set(name, { error: err, until, files: this.#files(name) });
  }

  /** Runs one request on `name`; the model counts as busy (drain waits for it) from here to its answer. */
  async invoke(name: string, request: InvokeRequest, opts?: JobOptions): Promise<InvokeResult> {
    const [entry, waitMicros] = await this.#acquire(name);
    try {
      const result = await entry.model!.submit(request, opts);
      return waitMicros === 0 ? result : { ...result, loadWaitMicros: waitMicros };
    } catch (err) {
      // A handler's error can name a file in the model's directory: shown as the url the client sent, as at load.
      throw entry.artifact?.hidePaths(err) ?? err;
    } finally {
      entry.release();
    }
  }

  /**
   * The registration serving `name`, held (release() it), and how long it waited for its load (µs);
   * waits at most load_wait_timeout, jittered, then 503.
   */
  async #acquire(name: string): Promise<[Registration, number]> {
    const { config, registry, events } = this.deps;
    const first = registry.current(name);
    if (first?.serving) {
      events.stats.hits++;
      events.sink.cacheLookup?.(name, true);
      this.deps.policy.touch(name, this.deps.clock.now());
      first.hold();
      return [first, 0];
    }
    if (this.closing()) throw shuttingDown();
    // Without the cache only a registration serves: the loop below answers 404 for any other name.
    if (config.modelCache) checkModelName(name);
    const t0 = performance.now();
    let missed = false;
    const boundMs = config.loadWaitTimeoutSeconds * 1000 * (1 + Math.random());
    const deadline = this.deps.clock.now() + boundMs;
    for (;;) {
      const e = registry.current(name);
      if (e?.serving) {
        // No touch: the policy counts the load itself as the first use.
        e.hold();
        return [e, this.#waited(name, t0)];
      }
      if (this.closing()) throw shuttingDown();
      if (!e) {
        if (!config.modelCache || !this.#loadOnDemand(name)) throw modelNotFound(name);
        continue;
      }
      if (e.phase !== 'loading' && !config.modelCache) throw modelNotFound(name);
      // A miss is an invoke that waits for a load, counted once; a name nobody has (404) is none.
      if (!missed) {
        missed = true;
        events.stats.misses++;
        events.sink.cacheLookup?.(name, false);
      }
      // Loading: wait for it, holding the model from the instant it is ready. Leaving: wait until it is gone.
      const loading = e.phase === 'loading';
      const giveUp = loading ? e.holdWhenReady() : null;
      const settled = loading ? e.loadSettled : e.gone.then(() => null);
      const outcome = await within(settled, deadline - this.deps.clock.now(), 'timeout' as const, this.deps.clock);
      if (outcome === true) return [e, this.#waited(name, t0)];
      if (outcome === 'timeout') {
        giveUp?.();
        this.#waited(name, t0);
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

  /** The wait since `t0`, µs, for the metric and the invoke's answer alike: its request's overhead leaves it out. */
  #waited(name: string, t0: number): number {
    const micros = Math.round((performance.now() - t0) * 1000);
    this.deps.events.sink.loadWait?.(name, micros);
    return micros;
  }

  /** Starts loading `name` from model_store, else model_repository; false when neither can have it. */
  #loadOnDemand(name: string): boolean {
    const failed = this.#failedLoads.get(name);
    if (failed) {
      const left = failed.until - this.deps.clock.now();
      if (left >= 0 && this.#files(name) === failed.files) {
        // The load's own failure, saying for how long, and how to retry now.
        const [{ error }, seconds] = [failed, Math.max(1, Math.ceil(left / 1000))];
        throw new MmeError(
          error.code,
          `Model ${name} failed to load recently and is not retried for ${seconds} more s (load_failure_cache_seconds); to retry now, fix its files in model_store or send DELETE /models/${name}. The failure: ${error.message}`,
          { status: error.status, headers: { ...error.headers, 'Retry-After': String(seconds) }, cause: error },
        );
      }
      this.#failedLoads.delete(name);
    }
    const url = this.#findInStore(name) ?? this.deps.repository?.urlOf(name);
    if (!url) return false;
    // The load logs its own failure; the invokes waiting for it get the error from the registration.
    this.startLoad(name, url).catch(() => {});
    return true;
  }

  #files(name: string): string | null {
    const file = this.#findInStore(name);
    return file === null ? null : filesSignature(path.resolve(this.deps.config.modelStore!, file));
  }

  /** `<name>/`, `<name>.tar.gz` or `<name>.tgz` in model_store, relative to it: what a load error shows. */
  #findInStore(name: string): string | null {
    const store = this.deps.config.modelStore;
    if (!store) return null;
    for (const file of [name, `${name}.tar.gz`, `${name}.tgz`]) {
      if (fs.existsSync(path.resolve(store, file))) return file;
    }
    return null;
  }
}
