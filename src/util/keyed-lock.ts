/**
 * One mutex per model name: load, unload, scale, eviction and shutdown of a name run one at a time,
 * so none of them acts on a state another is halfway through changing. Waiters are served in order.
 */
export class KeyedLock {
  /** Held keys, with the waiters queued behind the holder. */
  readonly #held = new Map<string, Array<() => void>>();

  async acquire(key: string): Promise<() => void> {
    const waiters = this.#held.get(key);
    if (waiters) await new Promise<void>((resolve) => waiters.push(resolve));
    else this.#held.set(key, []);
    return this.#releaser(key);
  }

  tryAcquire(key: string): (() => void) | null {
    if (this.#held.has(key)) return null;
    this.#held.set(key, []);
    return this.#releaser(key);
  }

  #releaser(key: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const waiters = this.#held.get(key)!;
      const next = waiters.shift();
      // The key stays held, by the next waiter, so no tryAcquire slips in between.
      if (next) next();
      else this.#held.delete(key);
    };
  }
}
