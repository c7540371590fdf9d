/**
 * The per-model structures of the server in process, at n models: what one operation costs (µs)
 * against n (the registry, memory admission, the eviction policies, the metrics recorder), and an
 * eviction storm through the policies. The same classes the server runs, fed by plain loops: the
 * cost of the structure, without HTTP or worker processes around it.
 */
import { performance } from 'node:perf_hooks';
import { PrometheusMetrics } from '../../../src/metrics/prometheus';
import { MetricsRecorder } from '../../../src/metrics/recorder';
import { Admission } from '../../../src/server/cache/admission';
import type { EvictionPolicy } from '../../../src/server/cache/eviction-policy';
import { ClassedPolicy, type PolicyName } from '../../../src/server/cache/eviction-classes';
import type { Model } from '../../../src/server/models/model';
import { Registration } from '../../../src/server/models/registration';
import { ModelRegistry } from '../../../src/server/models/registry';
import { realClock } from '../../../src/util/clock';
import { median } from '../../../harness/statistics';

export interface StructureCost {
  n: number;
  /**
   * CPU µs per operation (this process's user + system time, which a busy machine inflates far less
   * than wall time), the median of kRounds rounds of kOps operations at n models.
   */
  registerMicros: number;
  unregisterMicros: number;
  /** registry.page(n / 2, 100): one GET /models page. */
  pageMicros: number;
  /** A load's memory reservation (admission, no eviction: SageMaker mode). */
  reserveMicros: number;
  gdsfTouchMicros: number;
  /** First victim, remove it, admit a newcomer. */
  gdsfEvictMicros: number;
  lruTouchMicros: number;
  lruEvictMicros: number;
  /** ModelWorkers update on a load (the metrics recorder, Prometheus on). */
  metricsMicros: number;
}

/** Operations a round, and rounds: the figure is the median round. */
const kOps = 1000;
const kRounds = 5;
const kModelBytes = 130 * 1024;

function fakeModel(): Model {
  return { memoryBytes: kModelBytes, memoryMoves: false, memoryMeasuredAt: 0 } as unknown as Model;
}

function register(registry: ModelRegistry, name: string): Registration {
  const e = new Registration(name, `/${name}`, false, false, realClock);
  registry.claim(e);
  e.built(fakeModel());
  e.to('ready');
  return e;
}

function unregister(registry: ModelRegistry, e: Registration): void {
  e.to('draining');
  e.to('stopping');
  e.to('gone');
  registry.release(e);
}

function cpuMicrosNow(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** CPU µs per call of `op(i)`, i counting on across rounds (kOps × kRounds calls in all). */
function perOp(op: (i: number) => void): number {
  const rounds: number[] = [];
  for (let r = 0, i = 0; r < kRounds; r++) {
    const t0 = cpuMicrosNow();
    for (const end = i + kOps; i < end; i++) op(i);
    rounds.push((cpuMicrosNow() - t0) / kOps);
  }
  return median(rounds);
}

async function perOpAsync(op: (i: number) => Promise<void>): Promise<number> {
  const rounds: number[] = [];
  for (let r = 0, i = 0; r < kRounds; r++) {
    const t0 = cpuMicrosNow();
    for (const end = i + kOps; i < end; i++) await op(i);
    rounds.push((cpuMicrosNow() - t0) / kOps);
  }
  return median(rounds);
}

function policyCosts(name: PolicyName, n: number): { touch: number; evict: number } {
  const policy = new ClassedPolicy(name);
  for (let i = 0; i < n; i++) policy.admit(`m${i}`, kModelBytes, 3000, i);
  let now = n;
  const touch = perOp((i) => policy.touch(`m${(i * 7919) % n}`, ++now));
  const evict = perOp((i) => {
    const [victim] = policy.victims(++now);
    policy.remove(victim);
    policy.admit(`new${i}`, kModelBytes, 3000, now);
  });
  return { touch, evict };
}

async function costsAt(n: number): Promise<StructureCost> {
  const registry = new ModelRegistry();
  for (let i = 0; i < n; i++) register(registry, `m${String(i).padStart(6, '0')}`);
  const added: Registration[] = [];
  const registerMicros = perOp((i) => added.push(register(registry, `x${i}`)));
  const unregisterMicros = perOp((i) => unregister(registry, added[i]));
  const pageMicros = perOp(() => registry.page(Math.floor(n / 2), 100));
  const admission = new Admission<Registration>({
    budgetBytes: 2 ** 50,
    maxLoadedModels: 0,
    evicts: false,
    policy: new ClassedPolicy('gdsf'),
    clock: realClock,
    tally: registry,
    fixedBytes: () => 0,
    current: (name) => registry.current(name),
    tryLock: () => null,
    evict: () => Promise.resolve(),
  });
  const loading = Array.from({ length: kOps * kRounds }, (_, i) => {
    const e = new Registration(`r${i}`, `/r${i}`, false, false, realClock);
    registry.claim(e);
    return e;
  });
  const abort = new AbortController().signal;
  const reserveMicros = await perOpAsync((i) => admission.reserve(loading[i], kModelBytes, abort));
  const gdsf = policyCosts('gdsf', n);
  const lru = policyCosts('lru', n);
  const recorder = new MetricsRecorder({
    intervalMs: 60_000,
    perModel: false,
    sinks: [],
    prometheus: new PrometheusMetrics(false, []),
    sampleSystem: () => Promise.resolve([]),
    log: () => {},
  });
  for (let i = 0; i < n; i++) recorder.modelWorkers(`m${i}`, 1);
  const metricsMicros = perOp((i) => recorder.modelWorkers(`w${i}`, 1));
  return {
    n,
    registerMicros,
    unregisterMicros,
    pageMicros,
    reserveMicros,
    gdsfTouchMicros: gdsf.touch,
    gdsfEvictMicros: gdsf.evict,
    lruTouchMicros: lru.touch,
    lruEvictMicros: lru.evict,
    metricsMicros,
  };
}

export async function structureCosts(sizes: readonly number[]): Promise<StructureCost[]> {
  await costsAt(sizes[0]); // warms the JIT up: the first size would pay for it
  const out: StructureCost[] = [];
  for (const n of sizes) out.push(await costsAt(n));
  return out;
}

export interface StormWindow {
  requests: number;
  hitRatio: number;
  evictions: number;
  /** CPU µs per request over the window. */
  cpuMicros: number;
  /** Wall time per request (µs): on a shared machine these include other processes' turns. */
  p50Micros: number;
  p99Micros: number;
}

export interface Storm {
  policy: PolicyName;
  names: number;
  room: number;
  requests: number;
  start: StormWindow;
  end: StormWindow;
}

/** Zipf (s = 1) over `names` ranks, drawn by binary search in the cumulative weights; a fixed seed. */
function zipf(names: number, seed: number): () => number {
  const cdf = new Float64Array(names);
  let total = 0;
  for (let i = 0; i < names; i++) cdf[i] = total += 1 / (i + 1);
  let state = seed >>> 0;
  return () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * total;
    let lo = 0;
    let hi = names - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/**
 * The storm: a Zipf stream over `names` models, room for `room` of them (the cache full from the
 * start with the first `room` names, in a shuffled order so rank and age do not line up), every
 * miss evicting the policy's first victim. Per-request cost over the first and the last window.
 */
export function evictionStorm(
  opts: { names: number; room: number; requests: number } = { names: 200_000, room: 100_000, requests: 1_000_000 },
): Storm[] {
  const { names, room, requests } = opts;
  const windowSize = Math.min(50_000, Math.floor(requests / 4));
  return (['gdsf', 'lru'] as const).map((name) => {
    const policy: EvictionPolicy = new ClassedPolicy(name);
    const loaded = new Set<number>();
    const draw = zipf(names, 42);
    let now = 0;
    for (let i = 0; i < room; i++) {
      const m = (i * 7919) % room;
      loaded.add(m);
      policy.admit(`m${m}`, kModelBytes, 3000, ++now);
    }
    const micros = new Float64Array(requests);
    const hit = new Uint8Array(requests);
    const cpuAt = new Map<number, number>();
    const windowEnds = new Set([0, windowSize, requests - windowSize, requests]);
    for (let r = 0; r <= requests; r++) {
      if (windowEnds.has(r)) cpuAt.set(r, cpuMicrosNow());
      if (r === requests) break;
      const m = draw();
      const t0 = performance.now();
      now++;
      if (loaded.has(m)) {
        policy.touch(`m${m}`, now);
        hit[r] = 1;
      } else {
        const [victim] = policy.victims(now);
        policy.remove(victim);
        loaded.delete(Number(victim.slice(1)));
        loaded.add(m);
        policy.admit(`m${m}`, kModelBytes, 3000, now);
      }
      micros[r] = (performance.now() - t0) * 1000;
    }
    const window = (from: number): StormWindow => {
      const slice = Array.from(micros.subarray(from, from + windowSize)).sort((a, b) => a - b);
      let hits = 0;
      for (let r = from; r < from + windowSize; r++) hits += hit[r];
      return {
        requests: windowSize,
        hitRatio: hits / windowSize,
        evictions: windowSize - hits,
        cpuMicros: (cpuAt.get(from + windowSize)! - cpuAt.get(from)!) / windowSize,
        p50Micros: slice[Math.floor(windowSize / 2)],
        p99Micros: slice[Math.floor(windowSize * 0.99)],
      };
    };
    return { policy: name, names, room, requests, start: window(0), end: window(requests - windowSize) };
  });
}
