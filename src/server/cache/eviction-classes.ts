/**
 * Eviction classes over a policy: each eviction_priority class (low, normal, high) is ranked by a
 * policy of its own (GDSF or LRU), and the victim order takes every model of a lower class before
 * any of a higher one. A pinned model is in no class: it is never offered as a victim, so only an
 * unload removes it, while it counts against the budget like any other.
 *
 * A class ranks only its own models, so a class's GDSF ages (L) and fits its load cost against its
 * own: a hot high-priority model cannot lift the low class's newcomers, nor the reverse.
 */
import { kEvictionPriorities, type EvictionPolicy, type EvictionPriority, type Standing } from './eviction-policy';

const kUnpinnedNormal: Standing = { pinned: false, evictionPriority: 'normal' };

export class ClassedPolicy implements EvictionPolicy {
  readonly name: string;
  /** One policy per class, lowest class first. */
  readonly #classes: ReadonlyArray<EvictionPolicy>;
  readonly #byPriority: ReadonlyMap<EvictionPriority, EvictionPolicy>;
  /** The class of each ranked model. */
  readonly #classOf = new Map<string, EvictionPolicy>();
  readonly #pinned = new Set<string>();

  /** `rank` makes the policy that ranks one class. */
  constructor(rank: () => EvictionPolicy) {
    this.#classes = kEvictionPriorities.map(() => rank());
    this.name = this.#classes[0].name;
    this.#byPriority = new Map(kEvictionPriorities.map((p, i) => [p, this.#classes[i]]));
  }

  /** How many models it ranks: pinned ones are not ranked. */
  get size(): number {
    return this.#classOf.size;
  }

  /** The pinned models it holds: what the cache may not evict. */
  get pinned(): ReadonlySet<string> {
    return this.#pinned;
  }

  admit(model: string, sizeBytes: number, loadMicros: number, now: number, standing = kUnpinnedNormal): void {
    this.remove(model);
    if (standing.pinned) {
      this.#pinned.add(model);
      return;
    }
    const policy = this.#byPriority.get(standing.evictionPriority)!;
    policy.admit(model, sizeBytes, loadMicros, now);
    this.#classOf.set(model, policy);
  }

  touch(model: string, now: number): void {
    this.#classOf.get(model)?.touch(model, now);
  }

  remove(model: string): void {
    this.#pinned.delete(model);
    this.#classOf.get(model)?.remove(model);
    this.#classOf.delete(model);
  }

  resize(model: string, sizeBytes: number): void {
    this.#classOf.get(model)?.resize(model, sizeBytes);
  }

  *victims(now: number): Generator<string> {
    for (const policy of this.#classes) yield* policy.victims(now);
  }
}
