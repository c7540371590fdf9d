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
 * Priorities decay with a half-life from each model's last use: without it a formerly hot model
 * keeps a priority that L needs thousands of evictions to reach, and squats in memory after the
 * traffic moved on. The whole priority decays (L with it, so newcomers still age against the rest),
 * which keeps the order of two models fixed until one of them is used: the victim order is a heap,
 * O(log n) per use and eviction with 100 000 models, not a sort of every model per eviction. Frequency is counted while cached only: carrying it across an
 * eviction let moderately popular big models squat: 5-9 % more load time on steady Zipf traces in
 * the simulator, and nothing saved on shifting ones.
 */
import { IndexedHeap } from '../../util/indexed-heap';
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

  /** The mean size of the loads seen (bytes). */
  get meanSize(): number {
    return this.#meanSize;
  }

  /** Microseconds a load of `sizeBytes` is expected to take (at least 1). */
  estimate(sizeBytes: number): number {
    const slope = this.#sizeVar > 0 ? Math.max(0, this.#coVar / this.#sizeVar) : 0;
    return Math.max(1, this.#meanMicros + slope * (sizeBytes - this.#meanSize));
  }
}

/** The fitted cost may drift this much (relative) before every model is re-ranked with the new fit. */
const kCostDrift = 0.01;

export class GdsfPolicy implements EvictionPolicy {
  readonly name = 'gdsf';
  readonly #entries = new Map<string, Entry>();
  /** Lowest key first, ties to the least recently used: the victim order, kept as models come and go. */
  readonly #order = new IndexedHeap<string, Key>((a, b) => a.key < b.key || (a.key === b.key && a.lastUse < b.lastUse));
  readonly #cost = new LoadCostFit();
  /** The fit's estimate at the last re-ranking, at the mean size it was taken at. */
  #rankedCost = { size: 0, micros: 0 };
  /** L, as a key: its value now is 2^(#agingKey - now / halfLife). */
  #agingKey = -Infinity;

  constructor(private readonly halfLifeMs = DEFAULT_HALF_LIFE_MS) {}

  get size(): number {
    return this.#entries.size;
  }

  admit(model: string, sizeBytes: number, loadMicros: number, now: number): void {
    this.#cost.add(sizeBytes, loadMicros);
    const e: Entry = { sizeBytes, frequency: 1, lastUse: now, base: this.#aging(now) };
    this.#entries.set(model, e);
    this.#rank(model, e);
    this.#rerankIfCostMoved();
  }

  touch(model: string, now: number): void {
    const e = this.#entries.get(model);
    if (!e) return;
    e.frequency = e.frequency * this.#decay(now - e.lastUse) + 1;
    e.base = this.#aging(now);
    e.lastUse = now;
    this.#rank(model, e);
  }

  /**
   * L rises to the lowest priority in the cache: exactly the victim's when the caller evicted our
   * first choice, and never above a model still cached when it skipped a pinned one or unloaded a
   * hot model on request, so such removals cannot lift newcomers over models that stay.
   */
  remove(model: string): void {
    if (!this.#entries.has(model)) return;
    this.#agingKey = Math.max(this.#agingKey, this.#order.get(this.#order.peek()!)!.key);
    this.#entries.delete(model);
    this.#order.delete(model);
  }

  resize(model: string, sizeBytes: number): void {
    const e = this.#entries.get(model);
    if (!e) return;
    e.sizeBytes = sizeBytes;
    this.#rank(model, e);
  }

  /** Lowest priority first; ties go to the least recently used. */
  victims(_now?: number): Iterable<string> {
    return this.#order.ordered();
  }

  #decay(ms: number): number {
    return 2 ** (-ms / this.halfLifeMs);
  }

  /** L's value at `now`. */
  #aging(now: number): number {
    return 2 ** (this.#agingKey - this.#frame(now));
  }

  /** Where `now` is on the decay's scale: every priority halves relative to a fresh one each half-life. */
  #frame(now: number): number {
    return Number.isFinite(this.halfLifeMs) ? now / this.halfLifeMs : 0;
  }

  /**
   * A priority decays as a whole from its model's last use, L included, so the order of two models
   * never changes until one is used again: the key is log2(priority at last use) plus the time of
   * that use on the decay's scale. A size not measured yet (0) must not divide by zero.
   */
  #key(e: Entry): Key {
    const priority = e.base + (e.frequency * this.#cost.estimate(e.sizeBytes)) / Math.max(e.sizeBytes, 1);
    return { key: Math.log2(priority) + this.#frame(e.lastUse), lastUse: e.lastUse };
  }

  #rank(model: string, e: Entry): void {
    this.#order.set(model, this.#key(e));
  }

  /**
   * Ranks every model with the current fit when it moved past kCostDrift since the last time: the
   * fit settles as loads are seen, so this is rare and O(1) amortized per load; equal models cost
   * the same within the drift whatever their own load measured.
   */
  #rerankIfCostMoved(): void {
    const { size, micros } = this.#rankedCost;
    if (micros > 0 && Math.abs(this.#cost.estimate(size) - micros) <= kCostDrift * micros) return;
    this.#rankedCost = { size: this.#cost.meanSize, micros: this.#cost.estimate(this.#cost.meanSize) };
    this.#order.reorder((model) => this.#key(this.#entries.get(model)!));
  }
}

interface Key {
  key: number;
  lastUse: number;
}
