/**
 * model_repository: turns a model name into a complete local copy in the disk cache, downloading
 * it when the cache has none or the repository has a newer one. The name is the only input
 * (checked by checkModelName to be one safe path segment): the bucket and prefix are the
 * operator's. The model manager's per-name lock makes each name's fetch single-flight; the
 * download semaphore bounds how many run at once.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { diskFullError, isDiskFull } from '../artifacts/fs-errors';
import type { RepositoryConfig } from '../config/types';
import { MmeError } from '../errors';
import { Semaphore } from '../util/semaphore';
import { DiskCache, type CachedModel } from './disk-cache';
import { downloadTo } from './download';
import { relativePaths } from './object-paths';
import { ObjectStore, storeFailure, type StoredObject } from './object-store';

/** Hooks the metrics module listens on; synchronous, never throwing. */
export interface RepositoryEvents {
  repositoryDownload?(model: string, bytes: number, micros: number): void;
  repositoryError?(model: string): void;
  diskCacheLookup?(model: string, hit: boolean): void;
}

export interface FetchedModel {
  readonly path: string;
  /** Lets the disk cache evict it again: call when the model is unloaded. */
  readonly release: () => void;
}

const kArchiveSuffixes = ['.tar.gz', '.tgz'];

export class ModelRepository {
  readonly cache: DiskCache;
  readonly #store: ObjectStore;
  readonly #slots: Semaphore;
  #opened: Promise<void> | null = null;
  events: RepositoryEvents = {};

  constructor(
    readonly config: RepositoryConfig,
    private readonly log: (line: string) => void,
    env?: NodeJS.ProcessEnv,
  ) {
    this.cache = new DiskCache(config.cacheDir, config.cacheDiskBytes, log);
    this.#store = new ObjectStore(config, env);
    this.#slots = new Semaphore(config.maxConcurrentDownloads);
  }

  urlOf(name: string): string {
    return `s3://${this.config.bucket}/${this.#key(name)}`;
  }

  /** A complete local copy of `name`; 404 when the repository has none. */
  async fetch(name: string, signal: AbortSignal): Promise<FetchedModel> {
    this.#opened ??= this.cache.open();
    await this.#opened;
    const release = this.cache.pin(name);
    try {
      const hit = await this.#ensure(name, signal);
      this.events.diskCacheLookup?.(name, hit);
      this.cache.touch(name);
      return { path: this.cache.localPath(name), release };
    } catch (err) {
      release();
      // Our disk, not the store: "unavailable" would send the operator to the wrong place.
      if (isDiskFull(err)) throw diskFullError(`downloading model ${name}`, err, 'model_cache_dir');
      const gone = err instanceof MmeError && err.code === 'MME_ERR_MODEL_NOT_FOUND';
      // Deleted from the repository: a copy kept on disk would outlive it.
      if (gone) await this.cache.discard(name);
      else this.events.repositoryError?.(name);
      throw storeFailure(err, name, 'download', this.log);
    }
  }

  close(): void {
    this.#store.destroy();
  }

  /** True when the cached copy serves (fresh, or confirmed unchanged); false after a download. */
  async #ensure(name: string, signal: AbortSignal): Promise<boolean> {
    const cached = this.cache.get(name);
    if (!cached) return this.#refresh(name, undefined, signal);
    if (Date.now() - cached.validatedAt < this.config.ttlSeconds * 1000) return true;
    try {
      return await this.#refresh(name, cached, signal);
    } catch (err) {
      if (
        err instanceof MmeError &&
        err.code !== 'MME_ERR_REPOSITORY_UNAVAILABLE' &&
        err.code !== 'MME_ERR_REPOSITORY_TIMEOUT'
      )
        throw err;
      // The store is down, not the model: the copy it last confirmed is better than no model.
      storeFailure(err, name, 'revalidation (serving the copy on disk)', this.log);
      this.events.repositoryError?.(name);
      return true;
    }
  }

  /** Asks the repository for `name`: confirms `cached`, or downloads what it has now. */
  async #refresh(name: string, cached: CachedModel | undefined, signal: AbortSignal): Promise<boolean> {
    const dirPrefix = `${this.#key(name)}/`;
    const files = await this.#store.list(dirPrefix, signal);
    if (files.length > 0) {
      const version = files.map((f) => `${f.key} ${f.etag}`).join('\n');
      if (cached?.kind === 'dir' && cached.version === version) return this.#confirmed(name);
      await this.#downloadDir(name, dirPrefix, files, version, signal);
      return false;
    }
    for (const suffix of kArchiveSuffixes) {
      const key = this.#key(name) + suffix;
      const held = cached?.kind === 'archive' && cached.key === key ? cached.version : null;
      const release = await this.#slots.acquire();
      try {
        const got = await this.#store.get(key, held, signal);
        if (got.kind === 'missing') continue;
        if (got.kind === 'not-modified') return this.#confirmed(name);
        await this.#install(
          name,
          { kind: 'archive', key, version: got.etag, bytes: got.size },
          (tmp) => downloadTo(path.join(tmp, path.posix.basename(key)), got.body, got, this.#idleMs, signal),
          () => got.body.destroy(),
        );
        return false;
      } finally {
        release();
      }
    }
    throw new MmeError(
      'MME_ERR_MODEL_NOT_FOUND',
      `Model not found: ${name} (not in the model store, nor in model_repository as a directory, .tar.gz or .tgz)`,
    );
  }

  async #confirmed(name: string): Promise<true> {
    await this.cache.validated(name);
    return true;
  }

  async #downloadDir(
    name: string,
    prefix: string,
    files: StoredObject[],
    version: string,
    signal: AbortSignal,
  ): Promise<void> {
    const rel = relativePaths(
      files.map((f) => f.key.slice(prefix.length)),
      name,
    );
    const bytes = files.reduce((n, f) => n + f.size, 0);
    const release = await this.#slots.acquire();
    try {
      await this.#install(name, { kind: 'dir', key: prefix, version, bytes }, async (tmp) => {
        let total = 0;
        for (const [i, f] of files.entries()) {
          const file = path.join(tmp, 'model', rel[i]);
          await mkdir(path.dirname(file), { recursive: true });
          const got = await this.#store.get(f.key, null, signal);
          // Listed a moment ago: gone now means the model is being replaced; the next load sees the new one.
          if (got.kind !== 'body')
            throw new MmeError(
              'MME_ERR_REPOSITORY_UNAVAILABLE',
              `Model ${name} changed in model_repository during its download; retry.`,
            );
          total += await downloadTo(file, got.body, { size: f.size, etag: f.etag }, this.#idleMs, signal);
        }
        return total;
      });
    } finally {
      release();
    }
  }

  /** Reserves room, downloads into a temporary directory, and renames it into place (or removes it). */
  async #install(
    name: string,
    model: Omit<CachedModel, 'validatedAt'>,
    download: (tmp: string) => Promise<number>,
    abandon?: () => void,
  ): Promise<void> {
    let unreserve: () => void;
    try {
      unreserve = await this.cache.reserve(Math.max(0, model.bytes), name);
    } catch (err) {
      abandon?.();
      throw err;
    }
    const t0 = performance.now();
    const tmp = await this.cache.tempDir();
    try {
      const bytes = await download(tmp);
      await this.cache.commit(name, tmp, { ...model, bytes, validatedAt: Date.now() });
      const micros = Math.round((performance.now() - t0) * 1000);
      this.events.repositoryDownload?.(name, bytes, micros);
      this.log(
        `[${name}] downloaded s3://${this.config.bucket}/${model.key}: ${(bytes / 2 ** 20).toFixed(1)} MiB in ${Math.round(micros / 1000)} ms`,
      );
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      throw err;
    } finally {
      unreserve();
    }
  }

  get #idleMs(): number {
    return this.config.timeoutSeconds * 1000;
  }

  #key(name: string): string {
    return this.config.prefix ? `${this.config.prefix}/${name}` : name;
  }
}
