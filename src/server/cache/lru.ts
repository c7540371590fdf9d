/**
 * Least recently used: the baseline that ModelMesh and Ray Serve ship. It ignores size and load
 * cost, so one scan over cold models flushes every hot one.
 */
import type { EvictionPolicy } from './eviction-policy';

export class LruPolicy implements EvictionPolicy {
  readonly name = 'lru';
  /** A Set iterates in insertion order, so re-inserting on use keeps it sorted oldest first. */
  readonly #models = new Set<string>();

  admit(model: string): void {
    this.#models.delete(model);
    this.#models.add(model);
  }

  touch(model: string): void {
    if (this.#models.delete(model)) this.#models.add(model);
  }

  remove(model: string): void {
    this.#models.delete(model);
  }

  /** Recency is all LRU knows; a size change does not move a model. */
  resize(): void {}

  get size(): number {
    return this.#models.size;
  }

  victims(): Iterable<string> {
    return this.#models.keys();
  }
}
