/**
 * A clock whose time moves only when the test says: timers fire in order of their due time (then
 * of arming) as advance() passes them, so a test proves what a timer does without waiting for it.
 */
import type { Clock, Timer } from '../../src/util/clock';

interface Pending extends Timer {
  due: number;
  seq: number;
  fn: () => void;
}

export class VirtualClock implements Clock {
  #now = 0;
  #seq = 0;
  readonly #pending = new Set<Pending>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const timer: Pending = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn, unref: () => undefined };
    this.#pending.add(timer);
    return timer;
  }

  clearTimeout(timer: Timer | null): void {
    if (timer) this.#pending.delete(timer as Pending);
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way (including ones they arm). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (let next = this.#next(end); next; next = this.#next(end)) {
      this.#pending.delete(next);
      this.#now = next.due;
      next.fn();
    }
    this.#now = end;
  }

  #next(until: number): Pending | null {
    let best: Pending | null = null;
    for (const t of this.#pending) {
      if (t.due <= until && (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq))) best = t;
    }
    return best;
  }
}
