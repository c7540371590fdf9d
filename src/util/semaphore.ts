/** Counts permits; acquire() resolves with a release function once a permit is free (FIFO). */
export class Semaphore {
  #free: number;
  readonly #waiters: Array<() => void> = [];

  constructor(permits: number) {
    this.#free = permits;
  }

  async acquire(): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiters.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next();
      else this.#free++;
    };
  }
}
