/**
 * The binary min-heap: keyed items whose order can change. Set (insert or re-rank), delete, pop
 * and peek by key in O(log n) / O(1), and the items in order, lazily: the first k cost O(k log k),
 * whatever the size. `before(a, b)`: a goes first. Users: the cache's victim orders (eviction-classes.ts) and
 * the dispatcher's deadlines (deadline-list.ts).
 */
export class IndexedHeap<K, V> {
  readonly #keys: K[] = [];
  readonly #values: V[] = [];
  readonly #at = new Map<K, number>();

  constructor(private readonly before: (a: V, b: V) => boolean) {}

  get size(): number {
    return this.#keys.length;
  }

  get(key: K): V | undefined {
    const i = this.#at.get(key);
    return i === undefined ? undefined : this.#values[i];
  }

  peek(): K | undefined {
    return this.#keys[0];
  }

  set(key: K, value: V): void {
    const i = this.#at.get(key);
    if (i === undefined) {
      this.#keys.push(key);
      this.#values.push(value);
      this.#at.set(key, this.#keys.length - 1);
      this.#up(this.#keys.length - 1);
      return;
    }
    this.#values[i] = value;
    this.#down(this.#up(i));
  }

  pop(): K | undefined {
    if (this.#keys.length === 0) return undefined;
    const key = this.#keys[0];
    this.delete(key);
    return key;
  }

  /** Drops every item whose key `dead` names: O(n). */
  prune(dead: (key: K) => boolean): void {
    let kept = 0;
    for (let i = 0; i < this.#keys.length; i++) {
      const key = this.#keys[i];
      if (dead(key)) {
        this.#at.delete(key);
        continue;
      }
      this.#keys[kept] = key;
      this.#values[kept] = this.#values[i];
      this.#at.set(key, kept++);
    }
    this.#keys.length = kept;
    this.#values.length = kept;
    this.reorder((_, v) => v);
  }

  clear(): K[] {
    const keys = this.#keys.splice(0);
    this.#values.length = 0;
    this.#at.clear();
    return keys;
  }

  delete(key: K): boolean {
    const i = this.#at.get(key);
    if (i === undefined) return false;
    const last = this.#keys.length - 1;
    this.#swap(i, last);
    this.#keys.pop();
    this.#values.pop();
    this.#at.delete(key);
    if (i < last) this.#down(this.#up(i));
    return true;
  }

  /** Keys in order, produced as they are read: a best-first walk of the heap beside it. */
  *ordered(): Generator<K> {
    if (this.#keys.length === 0) return;
    const frontier = new IndexedHeap<number, V>(this.before);
    frontier.set(0, this.#values[0]);
    for (let i = frontier.peek(); i !== undefined; i = frontier.peek()) {
      frontier.delete(i);
      yield this.#keys[i];
      for (const c of [2 * i + 1, 2 * i + 2]) if (c < this.#keys.length) frontier.set(c, this.#values[c]);
    }
  }

  /** Re-ranks every item after their order changed as a whole (O(n)). */
  reorder(value: (key: K, old: V) => V): void {
    for (let i = 0; i < this.#keys.length; i++) this.#values[i] = value(this.#keys[i], this.#values[i]);
    for (let i = (this.#keys.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  #up(i: number): number {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(this.#values[i], this.#values[parent])) break;
      this.#swap(i, parent);
      i = parent;
    }
    return i;
  }

  #down(i: number): void {
    const n = this.#keys.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let first = i;
      if (l < n && this.before(this.#values[l], this.#values[first])) first = l;
      if (r < n && this.before(this.#values[r], this.#values[first])) first = r;
      if (first === i) return;
      this.#swap(i, first);
      i = first;
    }
  }

  #swap(i: number, j: number): void {
    if (i === j) return;
    const k = this.#keys;
    const v = this.#values;
    [k[i], k[j]] = [k[j], k[i]];
    [v[i], v[j]] = [v[j], v[i]];
    this.#at.set(k[i], i);
    this.#at.set(k[j], j);
  }
}
