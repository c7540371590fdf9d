/**
 * The data plane against its limit, each figure a ratio in one run:
 * - an image-sized request ([1,3,224,224] float32) as JSON (~1.3 MB) and as .npy (~600 KB) at 4
 *   connections, and the same tensor as OIP v2 binary to /v2/models/image/infer, ours vs the
 *   in-process server decoding the same body with the same codecs;
 * - the server process's event-loop delay p99 under the JSON image load (prom-client's
 *   monitorEventLoopDelay, read from /metrics; reset by the scrape before the load);
 * - a slow model (20 ms a request) whose requests travel 8 to a frame: how long the first of a
 *   frame waits for its answer after the one before it, over its own run time (target ≤ 1.2×: it is
 *   answered when ready, not with the other seven).
 */
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeNpy } from '../../../src/worker-process/npy';
import { behaviourHandler } from '../../../harness/fault-handlers';
import { imageClassifierModel, writeModelDir } from '../../../harness/onnx-models';
import { seededRandom } from '../../../harness/random';
import {
  benchDurations,
  benchUsage,
  cpuPerRequest,
  measure,
  runBench,
  startBaseline,
  startBenchServer,
  type Measured,
} from '../kit/bench-run';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';
import { hammer } from '../../../harness/load-generator';
import { percentiles } from '../kit/latency';
import { HEADER_LENGTH_HEADER, joinBody } from '../../../src/oip/binary-body';

export interface DataPlaneResult {
  jsonBytes: number;
  npyBytes: number;
  json: { ours: Measured; baseline: Measured; ratio: number };
  npy: { ours: Measured; baseline: Measured; ratio: number };
  /** The same tensor as OIP v2 binary (a JSON header, then the float32 bytes) to /v2/models/image/infer. */
  oipBytes: number;
  oip: { ours: Measured; baseline: Measured; ratio: number };
  eventLoopDelayP99Ms: number;
  /** .npy at 4 connections, one more run each: CPU per request (µs, the server and its workers; the baseline), and the server's GC. */
  npyCost: {
    oursCpuMicros: number;
    baselineCpuMicros: number;
    serverGcShare: number;
    serverGcSeconds: Record<string, number>;
    traceGc: { markCompacts: number; scavenges: number };
  };
  /** p99 over bursts of (answer of the first request of a coalesced frame − answer before it) / run time. */
  coalescedFirstAnswerRatio: number;
  slowRunMs: number;
}

const kSlowMs = 20;

/** The server's GC time so far by kind (prom-client's nodejs_gc_duration_seconds), seconds. */
export async function scrapeGcSeconds(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\}\s+(\S+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

async function scrapeEventLoopP99(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^nodejs_eventloop_lag_p99_seconds\s+(\S+)/m.exec(text);
  return m ? Number(m[1]) * 1000 : NaN;
}

/** Sends `n` requests at once on their own connections; resolves with each answer's arrival time (ms), sorted. */
function burst(url: string, body: string, n: number): Promise<number[]> {
  const t0 = performance.now();
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<number>((resolve, reject) => {
          const req = http.request(
            url,
            { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
            (res) => {
              res.resume();
              res.on('end', () =>
                res.statusCode === 200
                  ? resolve(performance.now() - t0)
                  : reject(new Error(`status ${res.statusCode}`)),
              );
            },
          );
          req.on('error', reject);
          req.end(body);
        }),
    ),
  ).then((times) => times.sort((a, b) => a - b));
}

export async function benchDataPlane(settings: BenchSettings = settingsFromEnv()): Promise<DataPlaneResult> {
  const server = await startBenchServer([], { settings });
  const dir = writeModelDir(server.store, 'image', imageClassifierModel());
  const baseline = await startBaseline(path.join(dir, 'model.onnx'));
  try {
    for (const [name, url] of [
      ['image', dir],
      ['slow', writeModelDir(server.store, 'slow', imageClassifierModel(), { 'handler.js': behaviourHandler })],
    ])
      await server.loadModel({ model_name: name, url });
    const rand = seededRandom(3);
    // Four decimals, as a client serialising normalised pixels would send them: ~1.3 MB of JSON.
    const values = Array.from({ length: 3 * 224 * 224 }, () => Math.round(rand() * 1e4) / 1e4);
    const pixels = Float32Array.from(values);
    const rows = [
      [0, 1, 2].map((c) =>
        Array.from({ length: 224 }, (_, y) => values.slice((c * 224 + y) * 224, (c * 224 + y + 1) * 224)),
      ),
    ];
    const json = JSON.stringify({ inputs: { input: rows } });
    const npy = writeNpy({ type: 'float32', dims: [1, 3, 224, 224], data: pixels });
    const d = benchDurations();
    const oursUrl = `${server.url}/models/image/invoke`;
    const pair = async (
      body: string | Buffer,
      contentType: string,
      url = oursUrl,
      headers?: Record<string, string>,
    ) => {
      const ours = await measure(url, body, 4, d, contentType, headers);
      const base = await measure(baseline.url, body, 4, d, contentType, headers);
      return { ours, baseline: base, ratio: ours.rps / base.rps };
    };
    await scrapeEventLoopP99(server.url);
    const jsonPair = await pair(json, 'application/json');
    const eventLoopDelayP99Ms = await scrapeEventLoopP99(server.url);
    const npyPair = await pair(npy, 'application/x-npy');
    const oip = joinBody(
      {
        inputs: [
          {
            name: 'input',
            shape: [1, 3, 224, 224],
            datatype: 'FP32',
            parameters: { binary_data_size: pixels.byteLength },
          },
        ],
      },
      [Buffer.from(pixels.buffer, pixels.byteOffset, pixels.byteLength)],
    );
    const oipPair = await pair(oip.body, 'application/octet-stream', `${server.url}/v2/models/image/infer`, {
      [HEADER_LENGTH_HEADER]: String(oip.headerLength),
    });
    const npyRun = (url: string) => async () =>
      (await hammer(url, npy, { connections: 4, seconds: d.seconds, contentType: 'application/x-npy' })).rps *
      d.seconds;
    const gc0 = await scrapeGcSeconds(server.url);
    const line0 = server.lines.length;
    const t0 = performance.now();
    const oursCpuMicros = await cpuPerRequest(server.child.pid!, npyRun(oursUrl));
    const wallSeconds = (performance.now() - t0) / 1000;
    const gc1 = await scrapeGcSeconds(server.url);
    // With MME_BENCH_NODE_ARGS=--trace-gc: the collections V8 printed over that run, by kind.
    const traced = server.lines.slice(line0);
    const traceGc = {
      markCompacts: traced.filter((l) => l.includes('Mark-Compact')).length,
      scavenges: traced.filter((l) => l.includes('Scavenge')).length,
    };
    const serverGcSeconds = Object.fromEntries(Object.entries(gc1).map(([k, v]) => [k, v - (gc0[k] ?? 0)]));
    const npyCost = {
      oursCpuMicros,
      baselineCpuMicros: await cpuPerRequest(baseline.pid, npyRun(baseline.url)),
      serverGcShare: Object.values(serverGcSeconds).reduce((a, b) => a + b, 0) / wallSeconds,
      serverGcSeconds,
      traceGc,
    };

    const slowBody = JSON.stringify({ sleepMs: kSlowMs });
    const ratios: number[] = [];
    await burst(`${server.url}/models/slow/invoke`, slowBody, 10);
    for (let i = 0; i < (process.env.BENCH_QUICK ? 5 : 30); i++) {
      // 10 at once: the first runs alone, the second waits in the worker's pipe, the other eight
      // travel in one frame when the first is done; the third answer is the first of that frame.
      const t = await burst(`${server.url}/models/slow/invoke`, slowBody, 10);
      ratios.push((t[2] - t[1]) / kSlowMs);
    }
    return {
      jsonBytes: Buffer.byteLength(json),
      npyBytes: npy.length,
      json: jsonPair,
      npy: npyPair,
      oipBytes: oip.body.length,
      oip: oipPair,
      eventLoopDelayP99Ms,
      npyCost,
      coalescedFirstAnswerRatio: percentiles(ratios).p99,
      slowRunMs: kSlowMs,
    };
  } finally {
    baseline.stop();
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:data-plane',
  'Image-sized JSON and .npy requests and large responses against the in-process limit.',
);

if (require.main === module) runBench(USAGE, () => benchDataPlane());
