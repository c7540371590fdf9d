/**
 * Time as the lifecycle core and the metrics recorder see it: injected, so tests can run them on
 * virtual time (test/helpers/virtual-clock.ts) and prove what a timer does without waiting for it.
 */
import { performance } from 'node:perf_hooks';

/** A pending timer; `unref` lets the process exit while it waits (a background tick, not work). */
export interface Timer {
  unref(): void;
}

export interface Timers {
  setTimeout(fn: () => void, ms: number): Timer;
  clearTimeout(timer: Timer | null): void;
}

export interface Clock extends Timers {
  /** Monotonic milliseconds (performance.now() for the real clock): only differences mean anything. */
  now(): number;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (timer) => clearTimeout((timer as NodeJS.Timeout | null) ?? undefined),
};
