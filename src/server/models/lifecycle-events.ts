/** What the lifecycle reports, one method per thing that happened: cache counters and the metrics hooks. */

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

export class LifecycleEvents {
  /** The cache counters. */
  readonly stats = { hits: 0, misses: 0, loads: 0, loadFailures: 0, evictions: 0 };
  /** The metrics recorder, set once the server has built it. */
  sink: ManagerEvents = {};

  constructor(private readonly servingCount: () => number) {}

  lookup(name: string, hit: boolean): void {
    if (hit) this.stats.hits++;
    else this.stats.misses++;
    this.sink.cacheLookup?.(name, hit);
  }

  loaded(name: string, micros: number): void {
    this.stats.loads++;
    this.sink.modelLoaded?.(name, micros, true);
    this.sink.loadedModelCount?.(this.servingCount());
  }

  /** Counted when it fails, before its release: whoever waited for it reads the count on its answer. */
  loadFailed(): void {
    this.stats.loadFailures++;
  }

  /** A failed load has left nothing behind; `micros` covers the cleanup too. */
  failedLoadReleased(name: string, micros: number): void {
    this.sink.modelLoaded?.(name, micros, false);
  }

  unloaded(name: string, micros: number): void {
    this.sink.modelUnloaded?.(name, micros);
    this.sink.loadedModelCount?.(this.servingCount());
  }

  evicted(name: string, idleMs: number, micros: number): void {
    this.stats.evictions++;
    this.sink.evicted?.(name, idleMs);
    this.unloaded(name, micros);
  }

  idleUnloaded(name: string, micros: number): void {
    this.sink.idleUnloaded?.(name);
    this.unloaded(name, micros);
  }

  /** A request waited `micros` for its model to load. */
  waited(name: string, micros: number): void {
    this.sink.loadWait?.(name, micros);
  }
}
