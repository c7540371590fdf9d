/** Counts permits; acquire() resolves with a release function once a permit is free (FIFO). */
export class Semaphore {
  #free: number;
  readonly #waiters: Array<() => void> = [];

  constructor(permits: number) {
    this.#free = permits;
  }

  /** With `abort`: a wait still in line when it fires leaves the line and rejects with its reason. */
  async acquire(abort?: AbortSignal): Promise<() => void> {
    abort?.throwIfAborted();
    if (this.#free > 0) this.#free--;
    else
      await new Promise<void>((resolve, reject) => {
        const leave = () => {
          const at = this.#waiters.indexOf(granted);
          if (at >= 0) this.#waiters.splice(at, 1);
          reject(abort!.reason as Error);
        };
        const granted = () => {
          abort?.removeEventListener('abort', leave);
          resolve();
        };
        abort?.addEventListener('abort', leave, { once: true });
        this.#waiters.push(granted);
      });
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
