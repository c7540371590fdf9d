/**
 * A binary min-heap on an array: push and pop in O(log n), peek in O(1). Items are ordered by
 * `before(a, b)` (a goes first), given once.
 */
export class MinHeap<T> {
  #items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get length(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const a = this.#items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(a[i], a[parent])) break;
      [a[i], a[parent]] = [a[parent], a[i]];
      i = parent;
    }
  }

  pop(): T | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0) {
      a[0] = last!;
      this.#siftDown(0);
    }
    return top;
  }

  /** Drops every item `dead` says is dead: O(n). */
  prune(dead: (item: T) => boolean): void {
    this.#items = this.#items.filter((item) => !dead(item));
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  drainAll(): T[] {
    const out = this.#items;
    this.#items = [];
    return out;
  }

  #siftDown(i: number): void {
    const a = this.#items;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let first = i;
      if (l < a.length && this.before(a[l], a[first])) first = l;
      if (r < a.length && this.before(a[r], a[first])) first = r;
      if (first === i) return;
      [a[i], a[first]] = [a[first], a[i]];
      i = first;
    }
  }
}
