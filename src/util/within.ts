import { realClock, type Timer, type Timers } from './clock';

/**
 * `promise`'s value, or `fallback` once `ms` have passed on `timers` (the injected clock in the
 * lifecycle core), whichever comes first; the timer is cleared either way, so a bounded wait leaves
 * nothing behind to keep the process alive.
 */
export function within<T, F>(promise: Promise<T>, ms: number, fallback: F, timers: Timers = realClock): Promise<T | F> {
  let timer: Timer | null = null;
  return Promise.race([
    promise,
    new Promise<F>((r) => (timer = timers.setTimeout(() => r(fallback), Math.max(0, ms)))),
  ]).finally(() => timers.clearTimeout(timer));
}
