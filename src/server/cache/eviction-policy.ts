/**
 * The contract between the model cache manager and an eviction policy. A policy only ranks: the
 * manager owns loading, pinning and unloading, and tells the policy what happened. Time is always
 * passed in (ms) and never read here, so the simulator and the tests replay traces exactly.
 */
/** Eviction classes, lowest first: the cache takes every model of a class before any of the next. */
export const kEvictionPriorities = ['low', 'normal', 'high'] as const;
export type EvictionPriority = (typeof kEvictionPriorities)[number];

/** Where a model stands for eviction (its pinned and eviction_priority settings). */
export interface Standing {
  /** Never a victim: only an unload removes it. */
  readonly pinned: boolean;
  readonly evictionPriority: EvictionPriority;
}

export interface EvictionPolicy {
  readonly name: string;
  /**
   * A model finished loading (bytes, µs). This counts as its first use, so the invoke that caused
   * the load must not also `touch` it.
   */
  admit(model: string, sizeBytes: number, loadMicros: number, now: number, standing?: Standing): void;
  /** An invoke hit a loaded model. Unknown models are ignored by this and the next two. */
  touch(model: string, now: number): void;
  remove(model: string): void;
  resize(model: string, sizeBytes: number): void;
  /**
   * Best victim first, produced as read (the first cost the same with 100 000 models as with ten);
   * the order is undefined once the policy is told anything else.
   */
  victims(now: number): Iterable<string>;
  readonly size: number;
}
