/**
 * Eviction classes over a policy: each eviction_priority class is ranked by a policy of its own, and
 * the victim order takes every model of a lower class before any of a higher one. A class ranks only
 * its own models, so a hot high-priority model cannot lift (GDSF's L) the low class's newcomers. A
 * pinned model is in no class: only an unload removes it, while it counts against the budget.
 */
import { kEvictionPriorities, type EvictionPolicy, type EvictionPriority, type Standing } from './eviction-policy';
import { GdsfPolicy } from './gdsf';
import { LruPolicy } from './lru';

export type PolicyName = 'lru' | 'gdsf';

const kUnpinnedNormal: Standing = { pinned: false, evictionPriority: 'normal' };

/** The eviction_policy by its name, ranking each class (the constructor is the one place that knows every implementation). */
export class ClassedPolicy implements EvictionPolicy {
  /** Lowest class first (a Map keeps its insertion order). */
  readonly #byPriority: ReadonlyMap<EvictionPriority, EvictionPolicy>;
  readonly #classOf = new Map<string, EvictionPolicy>();
  readonly #pinned = new Set<string>();

  constructor(readonly name: PolicyName) {
    this.#byPriority = new Map(
      kEvictionPriorities.map((p) => [p, name === 'lru' ? new LruPolicy() : new GdsfPolicy()]),
    );
  }

  /** Pinned models are not ranked. */
  get size(): number {
    return this.#classOf.size;
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
    for (const policy of this.#byPriority.values()) yield* policy.victims(now);
  }
}
