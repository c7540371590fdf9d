/**
 * The longest wait a Node timer holds. setTimeout with more fires after 1 ms instead (with a
 * TimeoutOverflowWarning): a load deadline past it expires at once, and a deadline timer that
 * re-arms spins every millisecond. Every duration a client or a config file sets is bounded by it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The most `unitMs`-long units a timer holds, and how an error message says so. */
export function timerLimit(unitMs: number, unit: string): { max: number; text: string } {
  const max = Math.floor(MAX_TIMER_MS / unitMs);
  return { max, text: `${max} ${unit} (about 24.8 days, the longest a timer can wait)` };
}
