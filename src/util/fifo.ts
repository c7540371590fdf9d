/**
 * A FIFO on an array with a moving head: taking from the front costs O(1) instead of Array#shift's
 * copy, and the dead prefix is dropped once it is most of the array.
 */
export class Fifo<T> {
  /** Slots before #head are cleared as they are taken, so the array keeps no taken item alive; from #head on, every slot holds one. */
  #items: (T | undefined)[] = [];
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
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
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

  /** Drops every item `dead` says is dead, keeping the others in order. */
  prune(dead: (item: T) => boolean): void {
    this.#items = this.#live().filter((item) => !dead(item));
    this.#head = 0;
  }

  drainAll(): T[] {
    const out = this.#live();
    this.#items = [];
    this.#head = 0;
    return out;
  }

  #live(): T[] {
    return this.#items.slice(this.#head) as T[];
  }

  #compact(): void {
    this.#items = this.#items.slice(this.#head);
    this.#head = 0;
  }
}
