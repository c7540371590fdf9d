/**
 * The known name a mistyped one most likely meant, for "did you mean" in the errors of config keys
 * and request fields.
 */

/** The name in `known` nearest to `name` by edit distance, if it is close enough to be a typo of it. */
export function nearestName<T extends string>(name: string, known: Iterable<T>): T | null {
  let best: { name: T; distance: number } | null = null;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate);
    if (best === null || distance < best.distance) best = { name: candidate, distance };
  }
  // A third of the name, at least 2: close enough for a typo, too far for an unrelated name.
  return best !== null && best.distance <= Math.max(2, Math.floor(name.length / 3)) ? best.name : null;
}

/** Levenshtein distance: insertions, deletions and substitutions of one character each count 1. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
