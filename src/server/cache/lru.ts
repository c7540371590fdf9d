/**
 * Least recently used: the baseline that ModelMesh and Ray Serve ship. It ignores size and load
 * cost, so one scan over cold models flushes every hot one.
 */
import { IndexedHeap } from '../../util/indexed-heap';
import type { EvictionPolicy } from './eviction-policy';

export class LruPolicy implements EvictionPolicy {
  readonly name = 'lru';
  /** Each model by its last use's number, oldest first: the heap GDSF ranks with, over a counter. */
  readonly #order = new IndexedHeap<string, number>((a, b) => a < b);
  #uses = 0;

  get size(): number {
    return this.#order.size;
  }

  admit(model: string): void {
    this.#order.set(model, ++this.#uses);
  }

  touch(model: string): void {
    if (this.#order.get(model) !== undefined) this.admit(model);
  }

  remove(model: string): void {
    this.#order.delete(model);
  }

  /** Recency is all LRU knows; a size change does not move a model. */
  resize(): void {}

  victims(): Iterable<string> {
    return this.#order.ordered();
  }
}
