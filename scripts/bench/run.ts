/**
 * `npm run bench`: every benchmark, one after another (never two at once on 2 cores), printed as
 * one markdown table and written to bench-results/latest.{md,json}. BENCH_QUICK=1 runs short
 * versions that only check the harness works.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCacheSim } from '../cache-sim';
import { benchBatching } from './batching';
import { benchCacheLive, benchCacheLiveModes } from './cache-live';
import { benchColdStart } from './cold-start';
import { benchDataPlane } from './data-plane';
import { benchDensity } from './density';
import { benchGrpc } from './grpc';
import { benchUsage, runBench } from './bench-run';
import { benchHotPath } from './hot-path';
import { benchNoisyNeighbour } from './noisy-neighbour';
import { benchPreloadMemory } from './preload-memory';
import { benchSharedHosts } from './shared-hosts';
import { benchSharedLoads } from './shared-loads';
import { benchStreaming } from './streaming';
import { benchTail } from './tail';

const ms = (x: number) => `${x.toFixed(2)} ms`;
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const check = (ok: boolean) => (ok ? '✅' : '❌');

async function main(): Promise<void> {
  const ortVersion = require('onnxruntime-node/package.json').version as string;
  const machine = `${os.cpus()[0]?.model ?? 'cpu'} × ${os.availableParallelism()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, onnxruntime-node ${ortVersion}, load average ${os.loadavg()[0].toFixed(1)} at start`;
  const started = new Date().toISOString();

  const hot = await benchHotPath();
  const tail = await benchTail();
  const noisy = await benchNoisyNeighbour();
  const sharedLoads = await benchSharedLoads();
  const plane = await benchDataPlane();
  const batching = await benchBatching();
  const cold = [...(await benchColdStart(0)), ...(await benchColdStart(1))];
  const density = await benchDensity();
  const sim = runCacheSim();
  const live = [await benchCacheLive({ policy: 'lru' }), await benchCacheLive({ policy: 'gdsf' })];
  const shared = await benchSharedHosts();
  const liveModes = await benchCacheLiveModes();
  const preload = await benchPreloadMemory();
  const streaming = await benchStreaming();
  const grpc = await benchGrpc();

  const rows: string[] = [
    '| # | figure | measured | target |',
    '|---|---|---|---|',
    `| 1 | hot path: tiny MLP 16→32→4, 16 concurrent clients, 1 worker vs the in-process node:http + onnxruntime server | ${hot.ours.rps.toFixed(0)} vs ${hot.baseline.rps.toFixed(0)} req/s = **${hot.throughputRatio.toFixed(2)}×** | ≥ 0.8× ${check(hot.throughputRatio >= 0.8)} |`,
    `| 2 | latency at concurrency 1, tiny MLP: p50 / p99 ours, in-process server, raw session.run | ${ms(hot.latencyOurs.p50)} / ${ms(hot.latencyOurs.p99)}; ${ms(hot.latencyBaseline.p50)} / ${ms(hot.latencyBaseline.p99)}; ${ms(hot.rawRun.p50)} / ${ms(hot.rawRun.p99)} — server overhead p50 over the in-process server's **${ms(hot.latencyOurs.p50 - hot.latencyBaseline.p50)}** | ≤ 0.2 ms ${check(hot.latencyOurs.p50 - hot.latencyBaseline.p50 <= 0.2)} |`,
    `| 2b | p99 at concurrency 1, tiny MLP: ours vs the in-process server | ${ms(hot.latencyOurs.p99)} vs ${ms(hot.latencyBaseline.p99)} | ≤ 0.6 ms ${check(hot.latencyOurs.p99 <= 0.6)} |`,
    `| 2g | tail at concurrency 1, tiny MLP, ${tail.rounds} × ${tail.requests} requests interleaved with the in-process server: p50 / p99 / p99.9 dedicated; shared; in-process | ${ms(tail.dedicated.p50)} / ${ms(tail.dedicated.p99)} / ${ms(tail.dedicated.p999)}; ${ms(tail.shared.p50)} / ${ms(tail.shared.p99)} / ${ms(tail.shared.p999)}; ${ms(tail.inProcess.p50)} / ${ms(tail.inProcess.p99)} / ${ms(tail.inProcess.p999)} (server scavenges: ${tail.scavenges}, mean ${ms(tail.scavengeMeanMs)}) | — |`,
    `| 2h | c=1 p99 over in-process p99 | **${tail.p99Ratio.toFixed(2)}×** | ≤ 1.5× ${check(tail.p99Ratio <= 1.5)} |`,
    `| 2i | c=1 p99.9 over in-process p99.9 (shared mode: ${tail.sharedP999Ratio.toFixed(2)}×) | **${tail.p999Ratio.toFixed(2)}×** | ≤ 2× ${check(tail.p999Ratio <= 2)} |`,
    `| 2j | c=1 p50 overhead over in-process | **${ms(tail.p50OverheadMs)}** | ≤ 0.15 ms ${check(tail.p50OverheadMs <= 0.15)} |`,
    `| 2k | noisy neighbour: six tiny models at c=1 in turn beside a slow model (p50 ${ms(noisy.shared.slow.p50)} shared, ${ms(noisy.dedicated.slow.p50)} dedicated) on 4 connections: tiny req/s and p50 / p99, shared vs dedicated | ${noisy.shared.tinyRps.toFixed(0)} vs ${noisy.dedicated.tinyRps.toFixed(0)} req/s = **${noisy.rpsRatio.toFixed(2)}×**; ${ms(noisy.shared.tiny.p50)} / ${ms(noisy.shared.tiny.p99)} vs ${ms(noisy.dedicated.tiny.p50)} / ${ms(noisy.dedicated.tiny.p99)} | ≥ 0.8× ${check(noisy.rpsRatio >= 0.8)} |`,
    `| 2l | noisy neighbour: shared tiny p99 over dedicated tiny p99 | **${noisy.p99Ratio.toFixed(2)}×** | ≤ 2× ${check(noisy.p99Ratio <= 2)} |`,
    `| 2m | shared mode: load p50 one at a time / with 8 in flight (${sharedLoads.loads} loads each) | ${ms(sharedLoads.alone.p50)} / **${ms(sharedLoads.inFlight8.p50)}** | ≤ 5 ms ${check(sharedLoads.alone.p50 <= 5)} / ≤ 20 ms ${check(sharedLoads.inFlight8.p50 <= 20)} |`,
    `| 2c | image-sized request [1,3,224,224] float32 as JSON (${(plane.jsonBytes / 2 ** 20).toFixed(2)} MiB), 4 connections, vs the in-process server | ${plane.json.ours.rps.toFixed(0)} vs ${plane.json.baseline.rps.toFixed(0)} req/s = **${plane.json.ratio.toFixed(2)}×** | ≥ 0.95× ${check(plane.json.ratio >= 0.95)} |`,
    `| 2d | the same as .npy (${(plane.npyBytes / 2 ** 10).toFixed(0)} KiB), 4 connections, vs the in-process server | ${plane.npy.ours.rps.toFixed(0)} vs ${plane.npy.baseline.rps.toFixed(0)} req/s = **${plane.npy.ratio.toFixed(2)}×** | ≥ 0.9× ${check(plane.npy.ratio >= 0.9)} |`,
    `| 2e | server event-loop delay p99 under the JSON image load | **${ms(plane.eventLoopDelayP99Ms)}** | ≤ 2 ms ${check(plane.eventLoopDelayP99Ms <= 2)} |`,
    `| 2f | slow model (${plane.slowRunMs} ms a request), 8 requests in one frame: the first one's wait for its answer over its run time, p99 | **${plane.coalescedFirstAnswerRatio.toFixed(2)}×** | ≤ 1.2× ${check(plane.coalescedFirstAnswerRatio <= 1.2)} |`,
    `| 3 | batching: MLP 512→4096→512, 32 concurrent clients, batch_size 16 vs 1 | ${batching.rps16.toFixed(0)} vs ${batching.rps1.toFixed(0)} req/s = **${batching.ratio.toFixed(2)}×** (p99 ${batching.p99_16} vs ${batching.p99_1} ms) | ≥ 2.5× ${check(batching.ratio >= 2.5)} |`,
    ...cold.map(
      (c) =>
        `| 4 | cold start, POST /models → 200, p50 of load/unload cycles: ${c.model} (${c.sizeKB.toFixed(0)} KB) | **${ms(c.p50Ms)}** (waiting for process start ${ms(c.spawnMs)}, session ${ms(c.sessionMs)}) | ≤ 150 ms ${check(c.p50Ms <= 150)} |`,
    ),
    `| 5 | density: tiny models loaded before a ${density.budgetMB} MiB budget answers 507; PSS per loaded model | **${density.modelsLoaded} models**, ${density.perModelMB.toFixed(1)} MB each | — |`,
    ...sim
      .filter((r) => r.trace === 'zipf')
      .map(
        (r) =>
          `| 6 | cache simulator, Zipf trace, 2 GiB: ${r.policy} | hit ratio ${pct(r.result.hits / r.result.requests)}, load time ${(r.result.loadMicros / 6e7).toFixed(0)} min | — |`,
      ),
    ...live.map(
      (l) =>
        `| 6 | cache live: Zipf over ${l.models} models, ${l.room}, ${l.requests} invokes, ${l.policy} | ModelCacheHit ${pct(l.hitRatio)}, p50 ${ms(l.p50Ms)}, p99 ${ms(l.p99Ms)}, ${l.evictions} evictions | — |`,
    ),
    `| 7 | shared hosts: ${shared.models} distinct tiny models loaded through POST /models into ${shared.hosts} hosts: PSS of the whole server | **${shared.serverPssMB.toFixed(0)} MB**, ${shared.perModelMB.toFixed(2)} MB a model (dedicated: figure 5) | ≤ 1536 MB ${check(shared.serverPssMB <= 1536)} |`,
    `| 7b | shared hosts: cold load (POST /models → 200, no spare process), p50 / p99 | **${ms(shared.coldP50Ms)}** / ${ms(shared.coldP99Ms)} | p50 ≤ 20 ms ${check(shared.coldP50Ms <= 20)} |`,
    `| 7c | shared hosts: random-model traffic over the ${shared.models} models, 16 connections, vs one dedicated model (1 worker) in the same server | ${shared.randomRps.toFixed(0)} vs ${shared.dedicatedRps.toFixed(0)} req/s = **${shared.ratio.toFixed(2)}×** | ≥ 0.7× ${check(shared.ratio >= 0.7)} |`,
    ...liveModes.map(
      (l) =>
        `| 7d | cache live: Zipf over ${l.models} models, ${l.room} budget, ${l.requests} invokes, ${l.workerMode} | ModelCacheHit **${pct(l.hitRatio)}**, p50 ${ms(l.p50Ms)}, p99 **${ms(l.p99Ms)}**, ${l.loaded} loaded at the end, ${l.evictions} evictions | — |`,
    ),
    `| — | streaming: example text-generator, ${streaming.tokens} tokens, one run each, p50 | first chunk **${ms(streaming.firstChunkMs)}**, whole response ${ms(streaming.totalMs)} | — |`,
    `| — | gRPC ModelInfer, raw contents, vs HTTP JSON invoke: tiny MLP 16→32→4, 16 in flight, 1 worker | ${grpc.grpcRawRps.toFixed(0)} vs ${grpc.httpJsonRps.toFixed(0)} req/s = **${grpc.ratio.toFixed(2)}×** | ≥ 1× ${check(grpc.ratio >= 1)} |`,
    `| — | gRPC raw ModelInfer vs HTTP JSON: server + workers CPU per request (from /proc) | ${grpc.grpcRawCpuMicros.toFixed(0)} vs ${grpc.httpJsonCpuMicros.toFixed(0)} µs = **${grpc.cpuRatio.toFixed(2)}×** | ≤ 1× ${check(grpc.cpuRatio <= 1)} |`,
    `| — | the same at one offered rate for both, ${grpc.pacedRate} req/s | ${grpc.pacedGrpcRawCpuMicros.toFixed(0)} vs ${grpc.pacedHttpJsonCpuMicros.toFixed(0)} µs = **${grpc.pacedCpuRatio.toFixed(2)}×** | ≤ 1× ${check(grpc.pacedCpuRatio <= 1)} |`,
    `| — | gRPC StreamPredictions vs HTTP chunked: text-generator, ${grpc.tokens} tokens, first message p50 | **${ms(grpc.grpcFirstMessageMs)}** vs ${ms(grpc.httpFirstChunkMs)} | — |`,
    ...preload.map(
      (p) =>
        `| — | preload_model memory, 4 workers, ${p.model} (${p.weightsMB.toFixed(0)} MB weights) | ${p.onMB.toFixed(0)} MB on vs ${p.offMB.toFixed(0)} MB off | — |`,
    ),
  ];
  const md = [`Measured ${started} on ${machine}.`, '', ...rows].join('\n');
  console.log(md);
  const out = path.join(__dirname, '..', '..', '..', 'bench-results');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'latest.md'), `${md}\n`);
  fs.writeFileSync(
    path.join(out, 'latest.json'),
    `${JSON.stringify({ started, machine, hot, tail, noisy, sharedLoads, plane, batching, cold, density, sim, live, shared, liveModes, preload, streaming, grpc }, null, 2)}\n`,
  );
}

const USAGE = benchUsage(
  'npm run bench',
  'Every benchmark, one after another; prints one markdown table and writes bench-results/latest.{md,json}.',
);

runBench(USAGE, main, () => undefined);
