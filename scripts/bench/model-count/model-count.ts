/**
 * How cost grows with the model count (issue 30 items 5 and 6), in shared mode as SageMaker runs it
 * (SAGEMAKER_MULTI_MODEL=true: the platform sends POST /models, nothing is evicted by the server):
 *
 * - tiny models (16 → 32 → 4, each its own weights) loaded through POST /models with 8 in flight up
 *   to each checkpoint (1 000, 10 000, 100 000): at each, the memory of the server and its hosts in
 *   two accountings (PSS and RSS, the whole tree and the server alone), the loads' p50 / p99 over
 *   the last window before it, and GET /models page times;
 * - at the 10 000 checkpoint, random traffic over the loaded models against one dedicated model
 *   with batch_size 1 and with batching on, two ratios (item 5);
 * - in process, each per-model structure's cost per operation against n (registry, admission,
 *   eviction policies, metrics), and an eviction storm: a Zipf stream over 200 000 names with room
 *   for 100 000, per-request cost at the start and at the end.
 *
 * Loading stops early when the machine's available memory falls under kMinAvailableBytes: the
 * machine is shared, and the figures say how far it got.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cpuMicros, descendantsOf, rssBytes } from '../../../harness/process-probes';
import { hammer } from '../../../harness/load-generator';
import { postJson } from '../../../harness/http-requests';
import { median } from '../../../harness/statistics';
import { processMemoryBytes } from '../../../src/server/processes/worker-spawn';
import { benchDurations, benchUsage, measure, runBench, startBenchServer } from '../kit/bench-run';
import { percentiles, type Percentiles } from '../kit/latency';
import { UsageError } from '../../cli-flags';
import { MLP_STORE_BODY, writeMlpStore } from '../kit/mlp-store';
import { structureCosts, evictionStorm, type StructureCost, type Storm } from './structures';

const kInFlight = 8;
/** The loads before a checkpoint whose latencies it reports. */
const kWindow = 400;
/** Loading stops when the machine has less than this available (it is shared with other work). */
const kMinAvailableBytes = 3 * 2 ** 30;

export interface Memory {
  /** PSS of the server and every descendant: shared pages (node, libonnxruntime) counted once. */
  treePssMB: number;
  /** RSS of the same processes summed: shared pages counted once per process. */
  treeRssMB: number;
  serverPssMB: number;
  serverRssMB: number;
  hosts: number;
}

export interface Checkpoint {
  models: number;
  memory: Memory;
  /** The last kWindow loads before the checkpoint, 8 in flight (ms). */
  loads: Percentiles;
  /**
   * CPU of the server and its hosts per load since the previous checkpoint (µs, from /proc): what a
   * load costs whatever else the machine runs, where the latencies above wait for it.
   */
  cpuPerLoadMicros: number;
  /** GET /models?limit=100, first page and the page at the middle, p50 of 20 (ms). */
  firstPageMs: number;
  middlePageMs: number;
  /** GET /ping p50 of 20 (ms). */
  pingMs: number;
}

export interface RandomTraffic {
  models: number;
  connections: number;
  randomRps: number;
  dedicatedBatch1Rps: number;
  dedicatedBatchedRps: number;
  batchSize: number;
  maxBatchDelayMs: number;
  /** random / dedicated batch_size 1: the target is ≥ 0.8. */
  ratioUnbatched: number;
  ratioBatched: number;
  /**
   * The tree's memory once the traffic has run every model at least about once (a session's first
   * run allocates its buffers), the two dedicated workers included: what a later reading sees.
   */
  memoryAfter: Memory;
}

export interface ModelCountResult {
  quick: boolean;
  targets: number[];
  checkpoints: Checkpoint[];
  stoppedEarly: string | null;
  random: RandomTraffic | null;
  structures: StructureCost[];
  storm: Storm[];
}

async function memoryOf(root: number): Promise<Memory> {
  const pids = [root, ...descendantsOf(root)];
  const pss = await Promise.all(pids.map((pid) => processMemoryBytes(pid)));
  const rss = pids.map((pid) => rssBytes(pid));
  const MB = 2 ** 20;
  return {
    treePssMB: pss.reduce((a, b) => a + b, 0) / MB,
    treeRssMB: rss.reduce((a, b) => a + b, 0) / MB,
    serverPssMB: pss[0] / MB,
    serverRssMB: rss[0] / MB,
    hosts: pids.length - 1,
  };
}

function availableBytes(): number {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : Infinity;
}

async function getMs(url: string, times = 20): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
    samples.push(performance.now() - t0);
  }
  return median(samples);
}

async function randomTraffic(
  url: string,
  root: number,
  store: string,
  models: number,
  quick: boolean,
): Promise<RandomTraffic> {
  const batchSize = 16;
  const maxBatchDelayMs = 2;
  const solo = path.join(store, 'solo');
  fs.cpSync(path.join(store, 'm0'), solo, { recursive: true });
  for (const [name, extra] of [
    ['solo1', {}],
    ['soloB', { batch_size: batchSize, max_batch_delay: maxBatchDelayMs }],
  ] as const) {
    const res = await postJson(`${url}/models`, {
      model_name: name,
      url: solo,
      worker_mode: 'dedicated',
      initial_workers: 1,
      ...extra,
    });
    if (res.status !== 200) throw new Error(`load ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const d = quick ? { seconds: 2, reps: 1, warmupSeconds: 1 } : benchDurations();
  const connections = 16;
  const dedicated1 = await measure(`${url}/models/solo1/invoke`, MLP_STORE_BODY, connections, d);
  const batched = await measure(`${url}/models/soloB/invoke`, MLP_STORE_BODY, connections, d);
  const random = async (seconds: number) => {
    const r = await hammer(url, MLP_STORE_BODY, {
      connections,
      seconds,
      pathOf: () => `/models/m${Math.floor(Math.random() * models)}/invoke`,
    });
    if (r.errors + r.non2xx > 0) throw new Error(`random traffic: ${r.errors} errors, ${r.non2xx} non-2xx`);
    return r.rps;
  };
  await random(d.warmupSeconds);
  const runs: number[] = [];
  for (let i = 0; i < d.reps; i++) runs.push(await random(d.seconds));
  const randomRps = median(runs);
  return {
    models,
    connections,
    randomRps,
    dedicatedBatch1Rps: dedicated1.rps,
    dedicatedBatchedRps: batched.rps,
    batchSize,
    maxBatchDelayMs,
    ratioUnbatched: randomRps / dedicated1.rps,
    ratioBatched: randomRps / batched.rps,
    memoryAfter: await memoryOf(root),
  };
}

/**
 * The whole bench. `quick`: checkpoints 200 and 1 000, short traffic runs, structures up to 10 000
 * (what `npm run bench` can afford to rerun); `targets` overrides the checkpoints.
 */
export async function benchModelCount(
  opts: {
    quick?: boolean;
    targets?: number[];
    properties?: string[];
    log?: (line: string) => void;
    /** false: the loads alone, without the in-process structures part (`npm run bench`'s row). */
    structures?: boolean;
  } = {},
): Promise<ModelCountResult> {
  const quick = opts.quick ?? !!process.env.BENCH_QUICK;
  const targets = opts.targets ?? (quick ? [200, 1000] : [1000, 10_000, 100_000]);
  const log = opts.log ?? ((line: string) => console.error(line));
  const randomAt = quick ? targets[targets.length - 1] : 10_000;
  const budgetMB = 64 * 1024;
  // The server inherits this process's environment; the benches run.ts starts after this one must not.
  const sagemaker = process.env.SAGEMAKER_MULTI_MODEL;
  process.env.SAGEMAKER_MULTI_MODEL = 'true';
  const server = await startBenchServer([
    'worker_mode=shared',
    'spare_workers=0',
    `model_memory_budget_mb=${budgetMB}`,
    ...(opts.properties ?? []),
  ]).finally(() => {
    if (sagemaker === undefined) delete process.env.SAGEMAKER_MULTI_MODEL;
    else process.env.SAGEMAKER_MULTI_MODEL = sagemaker;
  });
  const checkpoints: Checkpoint[] = [];
  let random: RandomTraffic | null = null;
  let stoppedEarly: string | null = null;
  try {
    let loaded = 0;
    let written = 0;
    for (const target of targets) {
      // The store grows as the loads need it: 100 000 directories take a while to write.
      writeMlpStore(server.store, target, written);
      written = target;
      const latencies: number[] = [];
      const treeCpu = () =>
        [server.child.pid!, ...descendantsOf(server.child.pid!)].reduce((sum, pid) => sum + cpuMicros(pid), 0);
      const cpuBefore = treeCpu();
      const loadedBefore = loaded;
      let next = loaded;
      await Promise.all(
        Array.from({ length: kInFlight }, async () => {
          for (let i = next++; i < target && stoppedEarly === null; i = next++) {
            if (i % 1000 === 0 && availableBytes() < kMinAvailableBytes) {
              stoppedEarly = `stopped at about ${i} models: the machine had under ${kMinAvailableBytes / 2 ** 30} GiB available`;
              break;
            }
            const t0 = performance.now();
            const res = await postJson(`${server.url}/models`, {
              model_name: `m${i}`,
              url: path.join(server.store, `m${i}`),
            });
            if (res.status !== 200) throw new Error(`load m${i}: ${res.status} ${JSON.stringify(res.body)}`);
            latencies.push(performance.now() - t0);
            loaded++;
          }
        }),
      );
      const cpuPerLoadMicros = (treeCpu() - cpuBefore) / Math.max(1, loaded - loadedBefore);
      const memory = await memoryOf(server.child.pid!);
      const count = loaded;
      const checkpoint: Checkpoint = {
        models: count,
        memory,
        loads: percentiles(latencies.slice(-kWindow)),
        cpuPerLoadMicros,
        firstPageMs: await getMs(`${server.url}/models?limit=100`),
        middlePageMs: await getMs(`${server.url}/models?limit=100&next_page_token=${Math.floor(count / 2)}`),
        pingMs: await getMs(`${server.url}/ping`),
      };
      checkpoints.push(checkpoint);
      log(`model-count: ${JSON.stringify(checkpoint)}`);
      if (target === randomAt && stoppedEarly === null) {
        random = await randomTraffic(server.url, server.child.pid!, server.store, count, quick);
        log(`model-count: random traffic ${JSON.stringify(random)}`);
      }
      if (stoppedEarly !== null) break;
    }
  } finally {
    await server.stop();
  }
  const inProcess =
    opts.structures === false ? { quick, structures: [], storm: [] } : await benchModelCountStructures(quick);
  return { targets, checkpoints, stoppedEarly, random, ...inProcess };
}

/** The in-process part alone: per-operation cost against n and the eviction storm. */
export async function benchModelCountStructures(quick = !!process.env.BENCH_QUICK) {
  const structures = await structureCosts(quick ? [1000, 10_000] : [1000, 10_000, 100_000]);
  const storm = evictionStorm(quick ? { names: 20_000, room: 10_000, requests: 200_000 } : undefined);
  return { quick, structures, storm };
}

const USAGE = benchUsage(
  'npm run bench:model-count [-- OUT.json [structures | N,N,... [KEY=VALUE ...]]]',
  "Tiny models loaded through POST /models in shared mode up to 1 000, 10 000 and 100 000: memory, load latency with 8 in flight, GET /models pages, random traffic against a dedicated model; per-operation cost of the per-model structures against n and an eviction storm (`structures`: that in-process part alone; N,N,...: those checkpoints instead; KEY=VALUE: config.properties lines added to the server's, e.g. onnx_graph_optimization_level=basic).",
);

if (require.main === module) {
  const [out, part, ...properties] = process.argv.slice(2);
  const targets = part && part !== 'structures' ? part.split(',').map(Number) : undefined;
  runBench<object>(
    USAGE,
    async () => {
      if (targets?.some((n) => !Number.isInteger(n) || n <= 0))
        throw new UsageError(`checkpoints must be positive integers, like 1000,10000; got ${part}`);
      const bad = properties.find((p) => !/^[a-z_]+=/.test(p));
      if (bad !== undefined)
        throw new UsageError(
          `properties must be KEY=VALUE, like onnx_graph_optimization_level=basic; got ${bad.slice(0, 100)}`,
        );
      return part === 'structures' ? benchModelCountStructures() : benchModelCount({ targets, properties });
    },
    (r) => {
      const text = `${JSON.stringify(r, null, 2)}\n`;
      if (out) fs.writeFileSync(out, text);
      console.log(text);
    },
  );
}
