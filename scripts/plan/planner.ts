/**
 * The sizing planner's model: replays a workload through the cache simulator (the server's own
 * eviction policy) once per instance, with each model's memory and load time given by the worker
 * mode, and the requests split among instances as the router would split them.
 */
import { ClassedPolicy } from '../../src/server/cache/eviction-classes';
import { simulate } from '../cache-sim/simulate';
import type { Trace } from '../cache-sim/traces';
import { HashRing } from './hash-ring';
import { ASSUMPTIONS, MiB, type WorkerMode } from './assumptions';
import { InputError, type Workload } from './workload';

/**
 * one: a single instance. hash: a fleet whose router hashes the model name (ingress-nginx
 * upstream-hash-by, nginx hash consistent; SageMaker's own routing also keeps a model on the
 * instances that hold it). round-robin: a fleet behind a plain Service.
 */
export type Routing = 'one' | 'hash' | 'round-robin';

export interface Scenario {
  readonly mode: WorkerMode;
  readonly routing: Routing;
  readonly instances: number;
}

export interface Prediction extends Scenario {
  readonly hitRatio: number;
  readonly loadsPerMinute: number;
  /** Misses, plus hits on a model whose load has not finished: every request that waits for a load. */
  readonly waitingShare: number;
  /** Per instance: memory the models may use. */
  readonly budgetBytes: number;
  /** The tightest instance: budget minus the most its models ever held. */
  readonly headroomBytes: number;
}

/** What the models of one instance may use: its memory less the server's reserve and the mode's fixed cost. */
export function modelBudget(instanceBytes: number, mode: WorkerMode): number {
  return instanceBytes - ASSUMPTIONS.reserveMiB * MiB - mode.fixedBytes;
}

/** Which instance serves each request. */
function split(workload: Workload, routing: Routing, instances: number): number[][] {
  const parts: number[][] = Array.from({ length: instances }, () => []);
  if (routing === 'one' || instances === 1) {
    parts[0] = workload.requests.map((_, i) => i);
    return parts;
  }
  const ring = new HashRing(Array.from({ length: instances }, (_, i) => `instance-${i}`));
  const owner = workload.models.map((m) => Number(ring.serverOf(m.name).slice('instance-'.length)));
  workload.requests.forEach((r, i) => parts[routing === 'hash' ? owner[r.model] : i % instances].push(i));
  return parts;
}

export function predict(workload: Workload, instanceBytes: number, scenario: Scenario): Prediction {
  const { mode } = scenario;
  const instances = scenario.routing === 'one' ? 1 : scenario.instances;
  const budgetBytes = modelBudget(instanceBytes, mode);
  const models = workload.models.map((m) => ({
    name: m.name,
    sizeBytes: mode.footprintBytes(m.weightsBytes),
    loadMicros: mode.coldLoadMicros(m.weightsBytes),
  }));
  const biggest = models.reduce((a, b) => (b.sizeBytes > a.sizeBytes ? b : a));
  if (biggest.sizeBytes > budgetBytes) {
    throw new InputError(
      `model ${biggest.name} needs ${(biggest.sizeBytes / MiB).toFixed(0)} MiB with ${mode.name} workers, more than the ${(budgetBytes / MiB).toFixed(0)} MiB an instance of ${(instanceBytes / MiB / 1024).toFixed(1)} GiB leaves for models; choose a larger instance`,
    );
  }
  // Counted over the second half of the stream only: the first half warms the caches, so the figures
  // are the steady state, not the start-up where every model's first request must load.
  const from = workload.requests[workload.requests.length >> 1].at;
  const minutes = (workload.requests.at(-1)!.at - from) / 60_000;
  let measured = 0;
  let hits = 0;
  let waiting = 0;
  let headroomBytes = budgetBytes;
  for (const part of split(workload, scenario.routing, instances)) {
    const trace: Trace = { name: 'plan', models, requests: part.map((i) => workload.requests[i]) };
    const loadingUntil = new Map<number, number>();
    let peak = 0;
    simulate(
      trace,
      () => new ClassedPolicy(ASSUMPTIONS.policy),
      { bytes: budgetBytes },
      (request, hit, used) => {
        if (!hit) loadingUntil.set(request.model, request.at + models[request.model].loadMicros / 1000);
        if (request.at < from) return;
        measured++;
        peak = Math.max(peak, used);
        if (hit) hits++;
        if (!hit || request.at < loadingUntil.get(request.model)!) waiting++;
      },
    );
    headroomBytes = Math.min(headroomBytes, budgetBytes - peak);
  }
  return {
    ...scenario,
    instances,
    hitRatio: hits / measured,
    loadsPerMinute: (measured - hits) / minutes,
    waitingShare: waiting / measured,
    budgetBytes,
    headroomBytes,
  };
}

/** The most instances the planner tries before saying a target cannot be met with this instance size. */
export const MAX_INSTANCES = 64;

/** The smallest hash-routed fleet reaching `target`, or null when even MAX_INSTANCES do not. */
export function smallestFleet(
  workload: Workload,
  instanceBytes: number,
  mode: WorkerMode,
  target: number,
): Prediction | null {
  for (let n = 1; n <= MAX_INSTANCES; n++) {
    const p = predict(workload, instanceBytes, { mode, routing: 'hash', instances: n });
    if (p.hitRatio >= target) return p;
  }
  return null;
}
