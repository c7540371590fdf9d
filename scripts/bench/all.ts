/**
 * `npm run bench`: every benchmark, one after another (never two at once on 2 cores), in about 24
 * minutes on the 2-vCPU bench machine. Each bench whose figure is a ratio against a baseline runs
 * `kRepeats` times, each with one shorter measured run, so its spread shows; the others run once.
 * The throughput and latency benches also run once at the shipped defaults and once as the image
 * runs on SageMaker (kit/bench-settings.ts). Writes bench-results/latest.json (every raw figure, the commit, the machine, the
 * load), latest.md and the charts, and regenerates the docs sections quoting them. BENCH_QUICK=1
 * runs short versions that only check the harness works.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CAPACITY, runCacheSim } from '../cache-sim/main';
import { ClassedPolicy } from '../../src/server/cache/eviction-classes';
import { belady } from '../cache-sim/belady';
import { simulate } from '../cache-sim/simulate';
import { zipfTrace } from '../cache-sim/traces';
import { benchBatching } from './hot-path/batching';
import { benchCacheLive } from './cache/cache-live';
import { writeCharts } from './report/charts';
import { benchBackToBack } from './loads/back-to-back';
import { benchColdStart } from './loads/cold-start';
import { benchConnections } from './hot-path/connections';
import { benchDataPlane } from './data-plane/data-plane';
import { benchDensity } from './memory/density';
import { benchGrpc } from './data-plane/grpc';
import { benchGrpcH2load, h2loadMissing } from './data-plane/grpc-h2load';
import { benchModelCount } from './model-count/model-count';
import { benchUsage, runBench, useFullRunDurations } from './kit/bench-run';
import { type BenchSettings, kOtherSettings, type OtherSettings } from './kit/bench-settings';
import { benchHotPath } from './hot-path/hot-path';
import { benchNoisyNeighbour } from './workers/noisy-neighbour';
import { benchAutoscalePairs } from './workers/autoscale-pairs';
import { benchPreloadMemory } from './memory/preload-memory';
import { renderLatestMd } from './report/report';
import { LATEST_JSON, LATEST_MD, ROOT, type BenchRun, type SettingsFigures, type SimRoomPoint } from './report/results';
import { benchSharedFootprint } from './memory/shared-footprint';
import { benchSharedHosts } from './workers/shared-hosts';
import { benchSharedLoads } from './loads/shared-loads';
import { benchStreaming } from './data-plane/streaming';
import { benchTail } from './hot-path/tail';

/** Runs of each ratio's bench: the spread of three shows whether a change moved the figure or the noise did. */
const kRepeats = 3;
const quick = Boolean(process.env.BENCH_QUICK);
/** Rooms of the cache simulator's chart, GiB, around the 2 GiB of the docs' table (the trace holds ~10). */
const kSimRoomsGiB = [0.5, 1, 2, 3, 4, 6];

function commit(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** The simulator over the Zipf trace at each room: deterministic, so it needs no repeats. */
function simByRoom(): SimRoomPoint[] {
  const trace = zipfTrace({ seed: 1 });
  const policies = [
    ['LRU', () => new ClassedPolicy('lru')],
    ['GDSF', () => new ClassedPolicy('gdsf')],
    ['Belady (offline)', belady],
  ] as const;
  return kSimRoomsGiB.flatMap((roomGiB) =>
    policies.map(([policy, factory]) => {
      const r = simulate(trace, factory, { ...CAPACITY, bytes: roomGiB * 2 ** 30 });
      return { trace: trace.name, policy, roomGiB, hitRatio: r.hits / r.requests };
    }),
  );
}

async function main(): Promise<BenchRun> {
  useFullRunDurations();
  const t0 = performance.now();
  const sections: BenchRun['sections'] = [];
  /** Runs one part of the bench, timed, with the load it started under. */
  const section = async <T>(name: string, work: () => Promise<T> | T): Promise<T> => {
    const loadAverage = os.loadavg()[0];
    const started = performance.now();
    console.error(`bench: ${name} (load average ${loadAverage.toFixed(1)})`);
    const out = await work();
    const seconds = (performance.now() - started) / 1000;
    sections.push({ name, seconds, loadAverage });
    console.error(`bench: ${name} took ${(seconds / 60).toFixed(1)} min`);
    return out;
  };
  const repeated = async <T>(name: string, bench: () => Promise<T>): Promise<T[]> =>
    section(`${name} × ${kRepeats}`, async () => {
      const runs: T[] = [];
      for (let i = 0; i < kRepeats; i++) runs.push(await bench());
      return runs;
    });
  /**
   * A throughput or latency bench: `runs` at the tuned settings and one at each other settings
   * (kit/bench-settings.ts), the others between the tuned ones (tuned, defaults, tuned, sagemaker,
   * tuned), so a drift of the machine's load does not favour one.
   */
  const atEverySettings = async <T>(
    name: string,
    runs: number,
    bench: (settings: BenchSettings) => Promise<T>,
  ): Promise<{ tuned: T[]; other: Record<OtherSettings, T> }> =>
    section(`${name}${runs > 1 ? ` × ${runs}` : ''}, defaults, SageMaker`, async () => {
      const order: BenchSettings[] = [];
      for (let i = 0; i < runs; i++)
        order.push('tuned', ...(i < runs - 1 && kOtherSettings[i] ? [kOtherSettings[i]] : []));
      order.push(...kOtherSettings.filter((s) => !order.includes(s)));
      const tuned: T[] = [];
      const other = {} as Record<OtherSettings, T>;
      for (const settings of order) {
        const out = await bench(settings);
        if (settings === 'tuned') tuned.push(out);
        else other[settings] = out;
      }
      return { tuned, other };
    });

  const started = new Date().toISOString();
  const loadAtStart = os.loadavg()[0];
  const hot = await atEverySettings('hot path', kRepeats, benchHotPath);
  const tail = await atEverySettings('tail', kRepeats, benchTail);
  const connections = await atEverySettings('connections', 1, benchConnections);
  const noisy = await atEverySettings('noisy neighbour', kRepeats, benchNoisyNeighbour);
  const plane = await atEverySettings('data plane', kRepeats, benchDataPlane);
  const batching = await atEverySettings('batching', kRepeats, benchBatching);
  const shared = await repeated('shared hosts', () => benchSharedHosts());
  const grpc = await atEverySettings('gRPC', kRepeats, (settings) => benchGrpc({ settings }));
  // One C client for both protocols, with the shipped defaults: neither side pays a Node client's cost.
  const missing = h2loadMissing();
  const grpcH2load = await section('gRPC, one C client', async () =>
    missing ? { skipped: missing } : benchGrpcH2load({ pairs: quick ? 1 : 3, seconds: quick ? 2 : 4, warmup: 1 }),
  );
  const figuresAt = (s: OtherSettings): SettingsFigures => ({
    hot: [hot.other[s]],
    tail: [tail.other[s]],
    connections: connections.other[s],
    noisy: [noisy.other[s]],
    plane: [plane.other[s]],
    batching: [batching.other[s]],
    grpc: [grpc.other[s]],
  });
  const autoscalePairs = await section('autoscale pairs', () => benchAutoscalePairs());
  const sharedLoads = await section('shared loads', () => benchSharedLoads());
  const cold = await section('cold start', async () => {
    const cycles = quick ? 5 : 12;
    return [...(await benchColdStart(0, cycles)), ...(await benchColdStart(1, cycles))];
  });
  const backToBack = await section('back-to-back loads', () => benchBackToBack());
  const density = await section('density', () => benchDensity(quick ? 512 : 2048));
  const sharedFootprint = await section('shared footprint', () => benchSharedFootprint());
  const live = await section('cache live', async () => {
    const requests = quick ? 200 : 1500;
    return [await benchCacheLive({ policy: 'lru', requests }), await benchCacheLive({ policy: 'gdsf', requests })];
  });
  const liveModes = await section('cache live, worker modes', async () => {
    const o = {
      policy: 'gdsf',
      models: quick ? 2000 : 10_000,
      room: { budgetMB: 1024 },
      requests: quick ? 200 : 1000,
    } as const;
    return [
      await benchCacheLive({ ...o, workerMode: 'dedicated' }),
      await benchCacheLive({ ...o, workerMode: 'shared' }),
    ];
  });
  const preload = await section('preload memory', benchPreloadMemory);
  const streaming = await section('streaming', () => benchStreaming());
  const sim = await section('cache simulator', () => runCacheSim());
  const simRoom = await section('cache simulator by room', simByRoom);
  // Last: 100 000 shared models hold ~7 GiB until the server stops, and take ~7 min to load.
  const modelCount = await section('model count', () =>
    benchModelCount({ targets: quick ? [1000] : [100_000], structures: false }),
  );

  const ortVersion = (require('onnxruntime-node/package.json') as { version: string }).version;
  const run: BenchRun = {
    command: quick ? 'BENCH_QUICK=1 npm run bench' : 'npm run bench',
    quick,
    commit: commit(),
    started,
    seconds: (performance.now() - t0) / 1000,
    machine: {
      cpu: os.cpus()[0]?.model.trim() ?? 'cpu',
      cpus: os.availableParallelism(),
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      onnxruntime: ortVersion,
    },
    loadAverage: { start: loadAtStart, end: os.loadavg()[0] },
    sections,
    repeats: kRepeats,
    hot: hot.tuned,
    tail: tail.tuned,
    noisy: noisy.tuned,
    plane: plane.tuned,
    batching: batching.tuned,
    shared,
    grpc: grpc.tuned,
    grpcH2load,
    autoscalePairs,
    connections: connections.tuned[0],
    sharedLoads,
    cold,
    backToBack,
    density,
    sharedFootprint,
    sim,
    simRoom,
    live,
    liveModes,
    preload,
    streaming,
    modelCount,
    settings: Object.fromEntries(kOtherSettings.map((s) => [s, figuresAt(s)])),
  };
  fs.writeFileSync(LATEST_JSON, `${JSON.stringify(run, null, 2)}\n`);
  fs.writeFileSync(LATEST_MD, renderLatestMd(run));
  for (const skipped of await writeCharts(run)) console.error(`bench: no chart of the ${skipped}`);
  // The docs sections that quote the run follow it; in a process of its own, because the planner's
  // assumptions are read from latest.json once, when first imported.
  execFileSync(process.execPath, [path.join(__dirname, '..', 'docs-tables.js')], { stdio: 'inherit' });
  return run;
}

const USAGE = benchUsage(
  'npm run bench',
  'Every benchmark, one after another; writes bench-results/latest.{json,md} and the charts, and regenerates the docs that quote them.',
);

runBench(USAGE, main, (run) => {
  console.log(renderLatestMd(run));
  console.error(`bench: ${(run.seconds / 60).toFixed(1)} min`);
});
