/**
 * Replays a trace through an eviction policy the way the MME cache manager drives it: a hit touches,
 * a miss always loads (an invoke cannot be refused), evicting the policy's first choices until the
 * model fits. Loads are instantaneous, so only the policy's choices (and the models' classes) differ.
 */
import type { EvictionPolicy } from '../../src/server/cache/eviction-policy';
import type { SimModel, SimRequest, Trace } from './traces';

export interface Capacity {
  readonly bytes: number;
  /** Most models loaded at once (max_loaded_models); no limit when absent. */
  readonly models?: number;
}

export interface SimResult {
  readonly requests: number;
  readonly hits: number;
  readonly loads: number;
  readonly bytesLoaded: number;
  readonly loadMicros: number;
}

/** Gets the trace so that an offline policy (Belady) can look ahead; online ones ignore it. */
export type PolicyFactory = (trace: Trace) => EvictionPolicy;

/** Sees each request after the cache has served it: whether it hit, and the bytes loaded then. */
export type RequestObserver = (request: SimRequest, hit: boolean, usedBytes: number) => void;

export function simulate(
  trace: Trace,
  createPolicy: PolicyFactory,
  capacity: Capacity,
  observe?: RequestObserver,
): SimResult {
  const policy = createPolicy(trace);
  const loaded = new Map<string, SimModel>();
  const maxModels = capacity.models ?? Infinity;
  let used = 0;
  let hits = 0;
  let bytesLoaded = 0;
  let loadMicros = 0;
  for (const request of trace.requests) {
    const model = trace.models[request.model];
    if (loaded.has(model.name)) {
      hits++;
      policy.touch(model.name, request.at);
      observe?.(request, true, used);
      continue;
    }
    if (model.sizeBytes > capacity.bytes)
      throw new Error(`${model.name} (${model.sizeBytes} bytes) can never fit in ${capacity.bytes} bytes`);
    while (used + model.sizeBytes > capacity.bytes || loaded.size >= maxModels) {
      const [first] = policy.victims(request.at);
      const victim = first === undefined ? undefined : loaded.get(first);
      if (!victim) throw new Error(`${policy.name} offered no loaded model to evict`);
      loaded.delete(victim.name);
      used -= victim.sizeBytes;
      policy.remove(victim.name);
    }
    loaded.set(model.name, model);
    used += model.sizeBytes;
    bytesLoaded += model.sizeBytes;
    loadMicros += model.loadMicros;
    policy.admit(model.name, model.sizeBytes, model.loadMicros, request.at, model.standing);
    observe?.(request, false, used);
  }
  return { requests: trace.requests.length, hits, loads: trace.requests.length - hits, bytesLoaded, loadMicros };
}
