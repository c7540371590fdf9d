/**
 * Least recently used: the baseline that ModelMesh and Ray Serve ship. It ignores size and load
 * cost, so one scan over cold models flushes every hot one.
 */
import type { EvictionPolicy } from './eviction-policy';

interface Node {
  model: string;
  newer: Node | null;
  older: Node | null;
}

export class LruPolicy implements EvictionPolicy {
  readonly name = 'lru';
  /** A list, oldest first: a Set re-inserted on use leaves holes its first entry is found past. */
  readonly #nodes = new Map<string, Node>();
  #oldest: Node | null = null;
  #newest: Node | null = null;

  get size(): number {
    return this.#nodes.size;
  }

  admit(model: string): void {
    this.remove(model);
    const node: Node = { model, newer: null, older: this.#newest };
    if (this.#newest) this.#newest.newer = node;
    else this.#oldest = node;
    this.#newest = node;
    this.#nodes.set(model, node);
  }

  touch(model: string): void {
    if (this.#nodes.has(model)) this.admit(model);
  }

  remove(model: string): void {
    const node = this.#nodes.get(model);
    if (!node) return;
    this.#nodes.delete(model);
    if (node.older) node.older.newer = node.newer;
    else this.#oldest = node.newer;
    if (node.newer) node.newer.older = node.older;
    else this.#newest = node.older;
  }

  /** Recency is all LRU knows; a size change does not move a model. */
  resize(): void {}

  *victims(): Generator<string> {
    for (let n = this.#oldest; n !== null; n = n.newer) yield n.model;
  }
}
