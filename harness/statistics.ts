/** Order statistics of the benches and long runs: a figure a noisy sample or two does not move. */

function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

/** The middle value; the mean of the two middle values of an even count. */
export function median(xs: readonly number[]): number {
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The value a fraction `q` (0.99 for p99) of the samples fall below; NaN for no samples. */
export function percentile(xs: readonly number[], q: number): number {
  const s = sorted(xs);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))] ?? NaN;
}
