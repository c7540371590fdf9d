/** Sequential (concurrency 1) latency with a keep-alive agent, timed with hrtime: sub-ms precision. */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import { percentile } from '../../../harness/statistics';

export interface Percentiles {
  p50: number;
  p99: number;
  p999: number;
}

export function percentiles(samplesMs: number[]): Percentiles {
  return { p50: percentile(samplesMs, 0.5), p99: percentile(samplesMs, 0.99), p999: percentile(samplesMs, 0.999) };
}

/** A point of a latency distribution: the fraction `q` of the samples took at most `ms`. */
export interface CdfPoint {
  q: number;
  ms: number;
}

/** Every percent up to p99, then the tail's steps: enough points to draw a CDF, few enough for a JSON. */
const kCdfQuantiles = [...Array.from({ length: 100 }, (_, i) => i / 100), 0.995, 0.999, 0.9995, 0.9999];

export function cdf(samplesMs: number[]): CdfPoint[] {
  return kCdfQuantiles.map((q) => ({ q, ms: percentile(samplesMs, q) }));
}

export async function sequentialLatency(
  url: string,
  body: string,
  requests: number,
  warmup = 200,
): Promise<Percentiles> {
  return percentiles(await sequentialSamples(url, body, requests, warmup));
}

/** One JSON POST on `agent`'s keep-alive connections; resolves with the status (0: the connection failed). */
export function postOn(agent: http.Agent, target: URL, body: string): Promise<number> {
  return new Promise<number>((resolve) => {
    const req = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/** One call of an open loop: when it left (performance.now()), how long it took, what it gave. */
export interface Sent<T> {
  sent: number;
  ms: number;
  result: T;
}

/**
 * Calls `send` `rps` times a second for `ms` (open loop: a call leaves on schedule whether or not the
 * ones before it are answered, as traffic does; a closed loop would wait, and hide the queue);
 * resolves with every call once all are settled. `send` must not reject.
 */
export async function openLoop<T>(rps: number, ms: number, send: () => Promise<T>): Promise<Sent<T>[]> {
  const sends: Array<Promise<Sent<T>>> = [];
  const gap = 1000 / rps;
  const t0 = performance.now();
  for (let i = 0; i * gap < ms; i++) {
    const wait = t0 + i * gap - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    sends.push(send().then((result) => ({ sent, ms: performance.now() - sent, result })));
  }
  return Promise.all(sends);
}

/**
 * Each request's latency (ms), in order: one round of an interleaved comparison. Several URLs (one
 * server) are taken in turn, on the same keep-alive connection.
 */
export async function sequentialSamples(
  url: string | readonly string[],
  body: string,
  requests: number,
  warmup = 200,
): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const targets = (typeof url === 'string' ? [url] : url).map((u) => new URL(u));
  let turn = 0;
  const once = async () => {
    const target = targets[turn++ % targets.length];
    const t0 = performance.now();
    const status = await postOn(agent, target, body);
    if (status !== 200) throw new Error(`status ${status}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < warmup; i++) await once();
  const samples: number[] = [];
  for (let i = 0; i < requests; i++) samples.push(await once());
  agent.destroy();
  return samples;
}

/** The compute limit: `await session.run()` in a loop, same thread settings as a worker. */
export async function rawRunLatency(
  onnxPath: string,
  feeds: Record<string, ort.Tensor>,
  runs: number,
): Promise<Percentiles> {
  const session = await ort.InferenceSession.create(onnxPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  for (let i = 0; i < 200; i++) await session.run(feeds);
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    samples.push(performance.now() - t0);
  }
  await session.release();
  return percentiles(samples);
}
