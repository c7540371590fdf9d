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
   * A model finished loading: its measured memory (bytes) and how long the load took (µs). This
   * counts as the model's first use, so the invoke that caused the load must not also `touch` it.
   * `standing`: its class (classes.ts); a policy that ranks within one class ignores it.
   */
  admit(model: string, sizeBytes: number, loadMicros: number, now: number, standing?: Standing): void;
  /** An invoke hit a loaded model. Unknown models are ignored. */
  touch(model: string, now: number): void;
  /** The model left the cache (evicted or unloaded). Unknown models are ignored. */
  remove(model: string): void;
  /** Its measured size changed (memory is re-measured after load). Unknown models are ignored. */
  resize(model: string, sizeBytes: number): void;
  /**
   * Loaded models in eviction order, best victim first, produced as they are read (the first ones
   * cost the same with 100 000 models as with ten); the caller skips pinned ones (in flight,
   * loading). The order is undefined once the policy is told anything else.
   */
  victims(now: number): Iterable<string>;
  /** How many models it ranks. */
  readonly size: number;
}
