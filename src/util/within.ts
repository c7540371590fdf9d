/**
 * `promise`'s value, or `fallback` once `ms` have passed, whichever comes first; the timer is
 * cleared either way, so a bounded wait leaves nothing behind to keep the process alive.
 */
export function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer!: NodeJS.Timeout;
  return Promise.race([promise, new Promise<F>((r) => (timer = setTimeout(r, Math.max(0, ms), fallback)))]).finally(() => clearTimeout(timer));
}
