/**
 * Synthetic MME request traces, each a pure function of its seed. A model's load time is a fixed
 * overhead (worker process start, onnxruntime session creation) plus a part proportional to its
 * size, with some spread; popularity is independent of size.
 */
import { seededRandom, shuffled, zipfSampler } from '../../harness/random';
import type { Standing } from '../../src/server/cache/eviction-policy';

export interface SimModel {
  readonly name: string;
  readonly sizeBytes: number;
  readonly loadMicros: number;
  /** Its pinned and eviction_priority settings; absent = unpinned, normal. */
  readonly standing?: Standing;
}

export interface SimRequest {
  /** Index into the trace's models. */
  readonly model: number;
  /** ms since the start of the trace. */
  readonly at: number;
}

export interface Trace {
  readonly name: string;
  readonly models: readonly SimModel[];
  readonly requests: readonly SimRequest[];
}

export interface TraceOptions {
  readonly seed: number;
  readonly models?: number;
  readonly requests?: number;
  /** Zipf exponent. */
  readonly s?: number;
}

const MiB = 1024 * 1024;

/** The defaults of every trace, exported so that the README's description is generated from them. */
export const TRACE_SHAPE = {
  models: 300,
  requests: 100_000,
  s: 1,
  minSizeMiB: 1,
  maxSizeMiB: 200,
  /** Worker process start and onnxruntime session creation. */
  loadOverheadMs: 400,
  loadMsPerMiB: 8,
  /** Each load time is drawn within ± this share of overhead + size × rate. */
  loadSpread: 0.2,
  /** 50 requests/s: 100k requests span about half an hour, long enough for frequencies to decay. */
  requestIntervalMs: 20,
  scanModels: 400,
  shiftEvery: 10_000,
} as const;

/** Sizes are log-uniform: most models are small, a few are big, as in a real model store. */
function catalog(count: number, random: () => number, prefix: string): SimModel[] {
  return Array.from({ length: count }, (_, i) => {
    const { minSizeMiB, maxSizeMiB, loadOverheadMs, loadMsPerMiB, loadSpread } = TRACE_SHAPE;
    const mib = minSizeMiB * (maxSizeMiB / minSizeMiB) ** random();
    const loadMs = (loadOverheadMs + loadMsPerMiB * mib) * (1 - loadSpread + 2 * loadSpread * random());
    return { name: `${prefix}${i}`, sizeBytes: Math.round(mib * MiB), loadMicros: Math.round(loadMs * 1000) };
  });
}

function trace(name: string, models: SimModel[], picks: number[]): Trace {
  return { name, models, requests: picks.map((model, i) => ({ model, at: i * TRACE_SHAPE.requestIntervalMs })) };
}

/** (a) Popularity follows Zipf: a few models take most requests, a long tail is rarely used. */
export function zipfTrace({
  seed,
  models = TRACE_SHAPE.models,
  requests = TRACE_SHAPE.requests,
  s = TRACE_SHAPE.s,
}: TraceOptions): Trace {
  const random = seededRandom(seed);
  const all = catalog(models, random, 'm');
  const byRank = shuffled(models, random);
  const rank = zipfSampler(models, s, random);
  return trace(
    'zipf',
    all,
    Array.from({ length: requests }, () => byRank[rank()]),
  );
}

/**
 * (b) Zipf, and half-way through a batch job invokes each of `scanModels` cold models once, in one
 * burst before the regular traffic resumes.
 */
export function scanTrace({
  scanModels = TRACE_SHAPE.scanModels,
  ...options
}: TraceOptions & { scanModels?: number }): Trace {
  const base = zipfTrace(options);
  const cold = catalog(scanModels, seededRandom(options.seed + 1), 'scan');
  const picks = base.requests.map((r) => r.model);
  picks.splice(picks.length >> 1, 0, ...cold.map((_, i) => base.models.length + i));
  return trace('zipf + scan', [...base.models, ...cold], picks);
}

/** (c) Zipf whose ranking is reshuffled every `shiftEvery` requests: the hot set moves on. */
export function shiftingTrace({
  seed,
  models = TRACE_SHAPE.models,
  requests = TRACE_SHAPE.requests,
  s = TRACE_SHAPE.s,
  shiftEvery = TRACE_SHAPE.shiftEvery,
}: TraceOptions & { shiftEvery?: number }): Trace {
  const random = seededRandom(seed);
  const all = catalog(models, random, 'm');
  const rank = zipfSampler(models, s, random);
  let byRank: number[] = [];
  const picks = Array.from({ length: requests }, (_, i) => {
    if (i % shiftEvery === 0) byRank = shuffled(models, random);
    return byRank[rank()];
  });
  return trace('shifting zipf', all, picks);
}
