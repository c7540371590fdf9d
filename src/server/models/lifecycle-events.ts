import type { Direction, Reason } from '../autoscale/autoscaler';

/** Hooks the metrics module listens on; every call is synchronous and must not throw. */
export interface ManagerEvents {
  cacheLookup?(model: string, hit: boolean): void;
  modelLoaded?(model: string, micros: number, ok: boolean): void;
  modelUnloaded?(model: string, micros: number): void;
  loadWait?(model: string, micros: number): void;
  evicted?(model: string, idleMs: number): void;
  idleUnloaded?(model: string): void;
  workerRestarted?(model: string): void;
  sharedHostRestarted?(): void;
  sharedHostRecycled?(): void;
  sharedHostRunTime?(model: string, micros: number): void;
  loadedModelCount?(n: number): void;
  /** `model`'s worker target is `workers` now: after its load, a scale, an autoscale step; 0 once it is gone. */
  modelWorkers?(model: string, workers: number): void;
  /** Applied (up or down), or a scale-up skipped (no_memory, no_cores, no_gain). */
  autoscaleEvent?(model: string, direction: Direction, reason: Reason): void;
}

/** The cache counters (`stats`) and the metrics recorder (`sink`), set once the server has built it. */
export interface LifecycleEvents {
  readonly stats: { hits: number; misses: number; loads: number; loadFailures: number; evictions: number };
  sink: ManagerEvents;
}
