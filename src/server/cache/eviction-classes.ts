/**
 * The eviction policies, each eviction_priority class ranked apart: the victim order takes every
 * model of a lower class before any of a higher one, and a class ranks only its own models, so a
 * hot high-priority model cannot lift (L) the low class's newcomers. A pinned model is in no class:
 * only an unload removes it, while it counts against the budget.
 *
 * gdsf, GreedyDual-Size-Frequency (Cherkasova 1998): priority = L + frequency × cost / size, where
 * cost is the load time and L ("aging") rises to the priority of each victim. The cost users of an
 * MME feel is load time, a fixed overhead plus a part proportional to size, so GDSF keeps small
 * models and frequently used big ones, and a one-off scan evicts its own models instead of the hot
 * set. A new model starts with one use and sinks unless it is used again (an MME miss must load: no
 * admission filter as TinyLFU's).
 *
 * The cost is fitted over every load seen (LoadCostFit), not one load's own noisy time: equal models
 * cost the same, and decayed frequency, then recency, decide. Priorities decay with a half-life from
 * each model's last use, L with them, so a formerly hot model does not squat after the traffic moved
 * on, and the order of two models stays fixed until one is used (a heap, O(log n) per use). Frequency
 * is counted while cached only: carried across evictions it let popular big models squat (5-9 % more
 * load time on steady Zipf traces in the simulator).
 *
 * lru, least recently used, the baseline that ModelMesh and Ray Serve ship, is GDSF with every
 * priority equal, so recency alone decides: it ignores size and load cost, and one scan over cold
 * models flushes every hot one.
 */
import { IndexedHeap } from '../../util/indexed-heap';
import { kEvictionPriorities, type EvictionPolicy, type Standing } from './eviction-policy';

export type PolicyName = 'lru' | 'gdsf';

/**
 * In the simulator two minutes spent at most 2.5 % more load time than the best half-life on steady
 * Zipf traffic and 1-6 % more when the hot set moved; no decay at all spent 9-19 % more on moves.
 */
export const DEFAULT_HALF_LIFE_MS = 2 * 60_000;

/** The fitted cost may drift this much (relative) before every model is re-ranked with the new fit. */
const kCostDrift = 0.01;

const kUnpinnedNormal: Standing = { pinned: false, evictionPriority: 'normal' };

/**
 * Load time as a fixed part plus a part per byte, by least squares (Welford's running co-moments:
 * sizes in bytes would lose the variance to rounding in plain sums). With one size seen, or a
 * negative slope, the cost is the mean load time.
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

  get meanSize(): number {
    return this.#meanSize;
  }

  /** µs, at least 1. */
  estimate(sizeBytes: number): number {
    const slope = this.#sizeVar > 0 ? Math.max(0, this.#coVar / this.#sizeVar) : 0;
    return Math.max(1, this.#meanMicros + slope * (sizeBytes - this.#meanSize));
  }
}

/** Lowest key first, ties to the least recently used (`use` numbers every use). */
type Key = { key: number; use: number };

/** One class: its victim order, kept as models come and go, and what its priorities are taken against. */
class Rank {
  readonly order = new IndexedHeap<string, Key>((a, b) => a.key < b.key || (a.key === b.key && a.use < b.use));
  readonly cost = new LoadCostFit();
  /** The fit's estimate at the last re-ranking, at the mean size it was taken at. */
  rankedCost = { size: 0, micros: 0 };
  /** L, as a key: its value now is 2^(agingKey - now / halfLife). */
  agingKey = -Infinity;
}

interface Entry {
  readonly rank: Rank;
  sizeBytes: number;
  /** Uses, decayed to `lastUse`. */
  frequency: number;
  lastUse: number;
  use: number;
  /** L when the model was last used: what makes older entries age against newer ones. */
  base: number;
}

export class ClassedPolicy implements EvictionPolicy {
  /** Lowest class first (a Map keeps its insertion order). */
  readonly #ranks = new Map(kEvictionPriorities.map((p) => [p, new Rank()]));
  /** Pinned models are not ranked. */
  readonly #entries = new Map<string, Entry>();
  readonly #pinned = new Set<string>();
  #uses = 0;

  constructor(
    readonly name: PolicyName,
    private readonly halfLifeMs = DEFAULT_HALF_LIFE_MS,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  get pinned(): ReadonlySet<string> {
    return this.#pinned;
  }

  admit(model: string, sizeBytes: number, loadMicros: number, now: number, standing = kUnpinnedNormal): void {
    this.remove(model);
    if (standing.pinned) {
      this.#pinned.add(model);
      return;
    }
    const rank = this.#ranks.get(standing.evictionPriority)!;
    rank.cost.add(sizeBytes, loadMicros);
    const e: Entry = { rank, sizeBytes, frequency: 1, lastUse: now, use: ++this.#uses, base: this.#aging(rank, now) };
    this.#entries.set(model, e);
    rank.order.set(model, this.#key(e));
    // lru's keys do not read the cost fit: a re-rank would rebuild its heap in the same order.
    if (this.name === 'gdsf') this.#rerankIfCostMoved(rank);
  }

  touch(model: string, now: number): void {
    const e = this.#entries.get(model);
    if (!e) return;
    e.frequency = e.frequency * 2 ** (-(now - e.lastUse) / this.halfLifeMs) + 1;
    e.base = this.#aging(e.rank, now);
    e.lastUse = now;
    e.use = ++this.#uses;
    e.rank.order.set(model, this.#key(e));
  }

  /**
   * L rises to the lowest priority in the class, never above a model still cached: removing a hot
   * model (an unload, a skipped victim) cannot lift newcomers over models that stay.
   */
  remove(model: string): void {
    this.#pinned.delete(model);
    const e = this.#entries.get(model);
    if (!e) return;
    const { order } = e.rank;
    e.rank.agingKey = Math.max(e.rank.agingKey, order.get(order.peek()!)!.key);
    this.#entries.delete(model);
    order.delete(model);
  }

  resize(model: string, sizeBytes: number): void {
    const e = this.#entries.get(model);
    if (!e) return;
    e.sizeBytes = sizeBytes;
    e.rank.order.set(model, this.#key(e));
  }

  *victims(_now?: number): Generator<string> {
    for (const rank of this.#ranks.values()) yield* rank.order.ordered();
  }

  #aging(rank: Rank, now: number): number {
    return 2 ** (rank.agingKey - this.#frame(now));
  }

  /** Where `now` is on the decay's scale: every priority halves relative to a fresh one each half-life. */
  #frame(now: number): number {
    return Number.isFinite(this.halfLifeMs) ? now / this.halfLifeMs : 0;
  }

  /** log2(priority at last use) plus the time of that use on the decay's scale (a size not measured yet is 0). */
  #key(e: Entry): Key {
    if (this.name === 'lru') return { key: 0, use: e.use };
    const priority = e.base + (e.frequency * e.rank.cost.estimate(e.sizeBytes)) / Math.max(e.sizeBytes, 1);
    return { key: Math.log2(priority) + this.#frame(e.lastUse), use: e.use };
  }

  /** Re-ranks the class once its fit moved past kCostDrift: the fit settles, so this is rare (O(1) amortized). */
  #rerankIfCostMoved(rank: Rank): void {
    const { cost } = rank;
    const { size, micros } = rank.rankedCost;
    if (micros > 0 && Math.abs(cost.estimate(size) - micros) <= kCostDrift * micros) return;
    rank.rankedCost = { size: cost.meanSize, micros: cost.estimate(cost.meanSize) };
    rank.order.reorder((model) => this.#key(this.#entries.get(model)!));
  }
}
