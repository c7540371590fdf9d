/**
 * Synthetic MME request traces, each a pure function of its seed. A model's load time is a fixed
 * overhead (worker process start, onnxruntime session creation) plus a part proportional to its
 * size, with some spread; popularity is independent of size.
 */
import { seededRandom, shuffled, zipfSampler } from './random';

export interface SimModel {
  readonly name: string;
  readonly sizeBytes: number;
  readonly loadMicros: number;
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
const MIN_SIZE_MB = 1;
const MAX_SIZE_MB = 200;
const LOAD_OVERHEAD_MS = 400;
const LOAD_MS_PER_MB = 8;
/** 50 requests/s: 100k requests span about half an hour, long enough for frequencies to decay. */
const REQUEST_INTERVAL_MS = 20;

/** Sizes are log-uniform: most models are small, a few are big, as in a real model store. */
function catalog(count: number, random: () => number, prefix: string): SimModel[] {
  return Array.from({ length: count }, (_, i) => {
    const mb = MIN_SIZE_MB * (MAX_SIZE_MB / MIN_SIZE_MB) ** random();
    const loadMs = (LOAD_OVERHEAD_MS + LOAD_MS_PER_MB * mb) * (0.8 + 0.4 * random());
    return { name: `${prefix}${i}`, sizeBytes: Math.round(mb * MiB), loadMicros: Math.round(loadMs * 1000) };
  });
}

function trace(name: string, models: SimModel[], picks: number[]): Trace {
  return { name, models, requests: picks.map((model, i) => ({ model, at: i * REQUEST_INTERVAL_MS })) };
}

/** (a) Popularity follows Zipf: a few models take most requests, a long tail is rarely used. */
export function zipfTrace({ seed, models = 300, requests = 100_000, s = 1 }: TraceOptions): Trace {
  const random = seededRandom(seed);
  const all = catalog(models, random, 'm');
  const byRank = shuffled(models, random);
  const rank = zipfSampler(models, s, random);
  return trace('zipf', all, Array.from({ length: requests }, () => byRank[rank()]));
}

/**
 * (b) Zipf, and half-way through a batch job invokes each of `scanModels` cold models once, its
 * requests interleaved with the regular traffic.
 */
export function scanTrace({ scanModels = 400, ...options }: TraceOptions & { scanModels?: number }): Trace {
  const base = zipfTrace(options);
  const hot = base.models.length;
  const picks = base.requests.map((r) => r.model);
  const start = Math.floor(picks.length / 2);
  const scan = Array.from({ length: scanModels }, (_, i) => hot + i);
  picks.splice(start, scanModels, ...scan.flatMap((m, i) => [m, picks[start + i]]));
  const cold = catalog(scanModels, seededRandom(options.seed + 1), 'scan');
  return trace('zipf + scan', [...base.models, ...cold], picks);
}

/** (c) Zipf whose ranking is reshuffled every `shiftEvery` requests: the hot set moves on. */
export function shiftingTrace({ seed, models = 300, requests = 100_000, s = 1, shiftEvery = 10_000 }: TraceOptions & { shiftEvery?: number }): Trace {
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
