/**
 * The bounded local copy of model_repository: `<dir>/<name>/` holds one model (`model/` for a
 * directory, or the archive under its own file name) and `meta.json`. A download is built in a
 * `.tmp-*` directory and renamed into place, so `<dir>/<name>` is always complete: a crash leaves
 * only a `.tmp-*`, which open() removes. Eviction is LRU over models that no load holds (pinned),
 * independent of the memory cache: a model loaded in memory is never deleted from disk.
 */
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { unavailable } from './object-store';

export interface CachedModel {
  readonly kind: 'dir' | 'archive';
  /** For an archive its object key; for a directory the prefix. */
  readonly key: string;
  /** The archive's ETag, or every file's key and ETag for a directory: what revalidation compares. */
  readonly version: string;
  readonly bytes: number;
  /** When the repository last confirmed this copy (ms since the epoch). */
  validatedAt: number;
}

const kTmp = '.tmp-';
const kMeta = 'meta.json';

export class DiskCache {
  /** Insertion order is recency: touched entries move to the end. */
  readonly #index = new Map<string, CachedModel>();
  readonly #pins = new Map<string, number>();
  #usedBytes = 0;
  #reservedBytes = 0;

  constructor(
    readonly dir: string,
    readonly limitBytes: number,
    private readonly log: (line: string) => void,
  ) {}

  get usedBytes(): number {
    return this.#usedBytes;
  }

  /** Creates the directory, drops what a crash left, and indexes the complete models (oldest use first). */
  async open(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const found: Array<[string, CachedModel, number]> = [];
    for (const d of await readdir(this.dir, { withFileTypes: true })) {
      const full = path.join(this.dir, d.name);
      if (d.name.startsWith(kTmp) || !d.isDirectory()) {
        await rm(full, { recursive: true, force: true });
        continue;
      }
      try {
        const { usedAt, ...model } = JSON.parse(await readFile(path.join(full, kMeta), 'utf8')) as CachedModel & {
          usedAt: number;
        };
        found.push([d.name, model, usedAt ?? 0]);
      } catch {
        await rm(full, { recursive: true, force: true });
      }
    }
    for (const [name, model] of found.sort((a, b) => a[2] - b[2])) {
      this.#index.set(name, model);
      this.#usedBytes += model.bytes;
    }
    if (found.length > 0)
      this.log(
        `model cache: ${found.length} model(s), ${Math.round(this.#usedBytes / 2 ** 20)} MiB on disk in ${this.dir}`,
      );
  }

  get(name: string): CachedModel | undefined {
    return this.#index.get(name);
  }

  localPath(name: string): string {
    const m = this.#index.get(name)!;
    return path.join(this.dir, name, m.kind === 'dir' ? 'model' : path.posix.basename(m.key));
  }

  /**
   * Marks `name` as in use (never evicted) until the returned function is called, which also counts
   * as its most recent use: a model served until its unload is fresher than one unloaded long ago.
   */
  pin(name: string): () => void {
    this.#pins.set(name, (this.#pins.get(name) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.touch(name);
      const n = this.#pins.get(name)! - 1;
      if (n === 0) this.#pins.delete(name);
      else this.#pins.set(name, n);
    };
  }

  touch(name: string): void {
    const m = this.#index.get(name);
    if (!m) return;
    this.#index.delete(name);
    this.#index.set(name, m);
  }

  /**
   * Makes room for `bytes` more (evicting unpinned models, least recently used first) and holds it
   * until the returned function is called. 503 when what is pinned leaves too little room.
   */
  async reserve(bytes: number, model: string): Promise<() => void> {
    for (const [name, m] of this.#index) {
      if (this.#usedBytes + this.#reservedBytes + bytes <= this.limitBytes) break;
      if (this.#pins.has(name)) continue;
      await this.#remove(name);
      this.log(
        `model cache: removed ${name} from disk (least recently used; ${Math.round(m.bytes / 2 ** 20)} MiB) to make room for ${model}`,
      );
    }
    if (this.#usedBytes + this.#reservedBytes + bytes > this.limitBytes) {
      throw unavailable(
        `Model ${model} needs ${Math.ceil(bytes / 2 ** 20)} MiB in the disk cache, but models in use hold ${Math.ceil(this.#usedBytes / 2 ** 20)} of its ${Math.floor(this.limitBytes / 2 ** 20)} MiB (model_cache_disk_mb); unload a model or raise model_cache_disk_mb.`,
      );
    }
    this.#reservedBytes += bytes;
    let done = false;
    return () => {
      if (!done) this.#reservedBytes -= bytes;
      done = true;
    };
  }

  /** A fresh directory to download into; commit() moves it into place. */
  async tempDir(): Promise<string> {
    return mkdtemp(path.join(this.dir, kTmp));
  }

  /** Puts a finished download in place of `name`'s entry (if any), in one rename. */
  async commit(name: string, tmp: string, model: CachedModel): Promise<void> {
    await writeFile(path.join(tmp, kMeta), JSON.stringify({ ...model, usedAt: Date.now() }));
    const target = path.join(this.dir, name);
    // Out of the way first: rename() cannot replace a non-empty directory.
    const old = this.#index.has(name) ? `${path.join(this.dir, kTmp)}old-${name}-${Date.now()}` : null;
    if (old !== null) {
      await rename(target, old);
      this.#usedBytes -= this.#index.get(name)!.bytes;
      this.#index.delete(name);
    }
    await rename(tmp, target);
    if (old !== null) await rm(old, { recursive: true, force: true });
    this.#index.set(name, model);
    this.#usedBytes += model.bytes;
  }

  async validated(name: string): Promise<void> {
    const m = this.#index.get(name);
    if (!m) return;
    m.validatedAt = Date.now();
    await writeFile(path.join(this.dir, name, kMeta), JSON.stringify({ ...m, usedAt: Date.now() }));
  }

  /** Deletes `name` (a copy that turned out broken or gone from the repository) unless a load holds it. */
  async discard(name: string): Promise<void> {
    if (this.#index.has(name) && !this.#pins.has(name)) await this.#remove(name);
  }

  async #remove(name: string): Promise<void> {
    const m = this.#index.get(name)!;
    this.#index.delete(name);
    this.#usedBytes -= m.bytes;
    await rm(path.join(this.dir, name), { recursive: true, force: true });
  }
}
