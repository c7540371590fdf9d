/** Seeded randomness, so a trace is a pure function of its seed. */

/** mulberry32: tiny, fast and good enough to draw traces; Math.random cannot be seeded. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws indexes 0..n-1 with P(i) ∝ weights[i], by binary search in the cumulative weights. */
export function weightedSampler(weights: readonly number[], random: () => number): () => number {
  const cumulative: number[] = [];
  let sum = 0;
  for (const w of weights) cumulative.push((sum += w));
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid] > x) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}

/** Draws ranks 0..n-1 with P(rank k) ∝ 1 / (k + 1)^s. */
export function zipfSampler(n: number, s: number, random: () => number): () => number {
  return weightedSampler(
    Array.from({ length: n }, (_, k) => 1 / (k + 1) ** s),
    random,
  );
}

/** Fisher–Yates: a random order of 0..n-1. */
export function shuffled(n: number, random: () => number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}
