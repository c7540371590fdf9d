/**
 * Belady's offline policy: evict the model whose next use is farthest in the future. It is optimal
 * for hit ratio only when every model has the same size; with variable sizes (and load times) it is
 * the classic approximation of the optimum, not an exact bound, so an online policy may beat it on
 * a column. It is written as an EvictionPolicy so the simulator replays it like the real ones.
 */
import type { EvictionPolicy } from '../../src/server/cache/eviction-policy';
import type { Trace } from './traces';

export function belady(trace: Trace): EvictionPolicy {
  /** Each model's request times, ascending (a trace is in time order). */
  const uses = new Map<string, number[]>();
  for (const { model, at } of trace.requests) {
    const name = trace.models[model].name;
    const times = uses.get(name);
    if (times) times.push(at);
    else uses.set(name, [at]);
  }
  const nextUse = new Map<string, number>();
  const see = (model: string, now: number) => nextUse.set(model, firstAfter(uses.get(model) ?? [], now));
  return {
    name: 'belady',
    admit: (model, _size, _load, now) => see(model, now),
    touch: (model, now) => {
      if (nextUse.has(model)) see(model, now);
    },
    remove: (model) => nextUse.delete(model),
    resize: () => {},
    victims: () => [...nextUse].sort((a, b) => b[1] - a[1]).map(([model]) => model),
    get size() {
      return nextUse.size;
    },
  };
}

/** The first time in `times` after `now`, or Infinity: binary search. */
function firstAfter(times: readonly number[], now: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid] > now) hi = mid;
    else lo = mid + 1;
  }
  return times[lo] ?? Infinity;
}
