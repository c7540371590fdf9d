/**
 * GreedyDual-Size-Frequency (Cherkasova 1998): priority = L + frequency × cost / size, where cost is
 * the measured load time and L ("aging") rises to the priority of each victim. For an MME the cost
 * that users feel is load time, and load time is a fixed overhead (worker start, session creation)
 * plus a part proportional to size, so a byte holding a small model saves the most load time: GDSF
 * keeps those and the frequently used big ones, and lets a one-off scan evict its own models instead
 * of the hot set. It never refuses a model (an MME miss must load), unlike TinyLFU's admission
 * filter; a new model starts with one use (L + cost / size) and sinks unless it is used again.
 *
 * The cost is not one load's own time but what loads of that size cost, fitted over every load
 * seen: a fixed part (process start, session creation) plus a part per byte (LoadCostFit). One
 * load's time is noisy (a busy machine, a cold page cache): ranked by its own, the victim among
 * models of equal size and use was whichever load happened to measure slower, and a busy model could
 * go before one used twice whose one load measured slow. Fitted, equal models cost the same, and
 * decayed frequency and then recency (the tie-break) decide.
 *
 * Frequency decays with a half-life, and the ranking applies the decay up to `now`: without it a
 * formerly hot model keeps a priority that L needs thousands of evictions to reach, and squats in
 * memory after the traffic moved on. Frequency is counted while cached only: carrying it across an
 * eviction let moderately popular big models squat: 5-9 % more load time on steady Zipf traces in
 * the simulator, and nothing saved on shifting ones.
 */
import type { EvictionPolicy } from './eviction-policy';

interface Entry {
  sizeBytes: number;
  /** Uses, decayed to `lastUse`. */
  frequency: number;
  lastUse: number;
  /** L when the model was last used: what makes older entries age against newer ones. */
  base: number;
}

/**
 * Two minutes: a model called every 30 s weighs about six uses, one idle for ten minutes 1/32 of
 * what it had. In the simulator (50 requests/s) this spent at most 2.5 % more load time than the
 * best half-life on steady Zipf traffic and 1-6 % more when the hot set moved every 50 s to 13 min
 * (1 min favours fast moves, 10 min steady traffic); no decay at all spent 9-19 % more on moves.
 */
export const DEFAULT_HALF_LIFE_MS = 2 * 60_000;

/**
 * Load time as a fixed part plus a part per byte, by least squares over every load (Welford's
 * running means and co-moments: sizes in bytes would lose the variance to rounding in plain sums).
 * With one size seen, or a negative slope, the cost is the mean load time.
 */
export class LoadCostFit {
  #n = 0;
  #meanSize = 0;
  #meanMicros = 0;
  #sizeVar = 0;
  #coVar = 0;

  add(sizeBytes: number, loadMicros: number): void {
    this.#n++;
    const dSize = sizeBytes - this.#meanSize;
    this.#meanSize += dSize / this.#n;
    this.#meanMicros += (loadMicros - this.#meanMicros) / this.#n;
    this.#sizeVar += dSize * (sizeBytes - this.#meanSize);
    this.#coVar += dSize * (loadMicros - this.#meanMicros);
  }

  /** Microseconds a load of `sizeBytes` is expected to take (at least 1). */
  estimate(sizeBytes: number): number {
    const slope = this.#sizeVar > 0 ? Math.max(0, this.#coVar / this.#sizeVar) : 0;
    return Math.max(1, this.#meanMicros + slope * (sizeBytes - this.#meanSize));
  }
}

export class GdsfPolicy implements EvictionPolicy {
  readonly name = 'gdsf';
  readonly #entries = new Map<string, Entry>();
  readonly #cost = new LoadCostFit();
  #aging = 0;
  /** remove() has no time of its own; the latest time the caller told us stands in for it. */
  #clock = 0;

  constructor(private readonly halfLifeMs = DEFAULT_HALF_LIFE_MS) {}

  admit(model: string, sizeBytes: number, loadMicros: number, now: number): void {
    this.#clock = Math.max(this.#clock, now);
    this.#cost.add(sizeBytes, loadMicros);
    this.#entries.set(model, { sizeBytes, frequency: 1, lastUse: now, base: this.#aging });
  }

  touch(model: string, now: number): void {
    const e = this.#entries.get(model);
    if (!e) return;
    this.#clock = Math.max(this.#clock, now);
    e.frequency = this.#decayed(e, now) + 1;
    e.lastUse = now;
    e.base = this.#aging;
  }

  /**
   * L rises to the lowest priority in the cache: exactly the victim's when the caller evicted our
   * first choice, and never above a model still cached when it skipped a pinned one or unloaded a
   * hot model on request, so such removals cannot lift newcomers over models that stay.
   */
  remove(model: string): void {
    if (!this.#entries.has(model)) return;
    let lowest = Infinity;
    for (const e of this.#entries.values()) lowest = Math.min(lowest, this.#priority(e, this.#clock));
    this.#aging = Math.max(this.#aging, lowest);
    this.#entries.delete(model);
  }

  resize(model: string, sizeBytes: number): void {
    const e = this.#entries.get(model);
    if (e) e.sizeBytes = sizeBytes;
  }

  /** Lowest priority first; ties go to the least recently used. */
  victims(now: number): string[] {
    this.#clock = Math.max(this.#clock, now);
    return [...this.#entries]
      .map(([model, e]) => ({ model, priority: this.#priority(e, now), lastUse: e.lastUse }))
      .sort((a, b) => a.priority - b.priority || a.lastUse - b.lastUse)
      .map((v) => v.model);
  }

  #decayed(e: Entry, now: number): number {
    return e.frequency * 2 ** (-(now - e.lastUse) / this.halfLifeMs);
  }

  #priority(e: Entry, now: number): number {
    // A size not measured yet (0) must not divide by zero.
    return e.base + (this.#decayed(e, now) * this.#cost.estimate(e.sizeBytes)) / Math.max(e.sizeBytes, 1);
  }
}
