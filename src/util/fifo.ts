/**
 * A FIFO on an array with a moving head: taking from the front costs O(1) instead of Array#shift's
 * copy, and the dead prefix is dropped once it is most of the array.
 */
export class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** Puts `items` back at the front, in their order. */
  unshift(items: T[]): void {
    this.#compact();
    this.#items.unshift(...items);
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head++];
    if (this.#head === this.#items.length) this.drainAll();
    else if (this.#head > 1024 && this.#head * 2 > this.#items.length) this.#compact();
    return item;
  }

  remove(item: T): boolean {
    const i = this.#items.indexOf(item, this.#head);
    if (i < 0) return false;
    this.#items.splice(i, 1);
    return true;
  }

  drainAll(): T[] {
    const out = this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    return out;
  }

  #compact(): void {
    this.#items = this.#items.slice(this.#head);
    this.#head = 0;
  }
}
