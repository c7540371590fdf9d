/**
 * `npm run bench:fleet`: three MME instances on loopback in self-managed cache mode, each with room
 * for ROOM models, behind real nginx (installed from Debian's package when missing), serving a Zipf
 * stream over a store of MODELS tiny models. It compares nginx hashing the model name (deploy/nginx's
 * key), nginx round robin, and one instance with three times the room; then removes an instance
 * from the consistent-hash fleet and brings it back, counting the models that move.
 *
 * Hit ratios are the servers' own ModelCacheHit counters (GET /metrics); latencies are the client's.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePorts } from '../../../harness/cli-server';
import { seededRandom, shuffled, zipfSampler } from '../../../harness/random';
import { Nginx, routerConfig, type Balancing } from '../../../harness/routers/nginx';
import { requireProgram } from './require-program';
import { benchUsage, runBench, type BenchServer } from '../kit/bench-run';
import { counters, hitRatioBetween, post, startInstance } from './instances';
import { hotMain } from './hot';
import { percentiles } from '../kit/latency';
import { MLP_STORE_BODY, writeMlpStore } from '../kit/mlp-store';

const MODELS = 300;
const ROOM = 10;
const INSTANCES = 3;
const ZIPF_S = 0.9;
const REQUESTS = process.env.BENCH_QUICK ? 300 : 2000;
/** Requests in each window while an instance is gone and after it returns. */
const CHANGE_REQUESTS = process.env.BENCH_QUICK ? 150 : 600;
const CLIENTS = 4;
const SEED = 11;

const log = (line: string) => process.stderr.write(`${line}\n`);
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/** One Zipf stream of model names, long enough for the comparison and both change windows. */
function zipfStream(): string[] {
  const random = seededRandom(SEED);
  const byRank = shuffled(MODELS, random);
  const rank = zipfSampler(MODELS, ZIPF_S, random);
  return Array.from({ length: REQUESTS + 2 * CHANGE_REQUESTS }, () => `m${byRank[rank()]}`);
}

/**
 * Each request names its model one of the three ways the router reads: the path, the SageMaker
 * TargetModel header, Ray's header. Returns the latencies and the replica that served each model last.
 * Connections are kept alive within a call and closed after it: a router reload between calls retires
 * the nginx workers holding them.
 */
async function drive(
  base: string,
  models: readonly string[],
): Promise<{ latencies: number[]; replicaOf: Map<string, string> }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const latencies: number[] = [];
  const replicaOf = new Map<string, string>();
  let next = 0;
  const client = async () => {
    while (next < models.length) {
      const i = next++;
      const model = models[i];
      const [url, headers] =
        i % 3 === 0
          ? [`${base}/models/${model}/invoke`, {}]
          : i % 3 === 1
            ? [`${base}/invocations`, { 'X-Amzn-SageMaker-Target-Model': `${model}.tar.gz` }]
            : [`${base}/invocations`, { serve_multiplexed_model_id: model }];
      const t0 = performance.now();
      const res = await post(agent, url, headers, MLP_STORE_BODY);
      if (res.status !== 200) throw new Error(`${model}: ${res.status} ${res.text}`);
      latencies.push(performance.now() - t0);
      replicaOf.set(model, res.replica);
    }
  };
  try {
    await Promise.all(Array.from({ length: CLIENTS }, client));
  } finally {
    agent.destroy();
  }
  return { latencies, replicaOf };
}

interface Fleet {
  store: string;
  servers: BenchServer[];
  ports: number[];
  nginx: Nginx;
  base: string;
  dir: string;
  nginxPort: number;
  balancing: Balancing;
  stop(): Promise<void>;
}

async function startFleet(bin: string, store: string, rooms: number[], balancing: Balancing): Promise<Fleet> {
  const [nginxPort, ...ports] = await freePorts(rooms.length + 1);
  const servers = await Promise.all(rooms.map((room, i) => startInstance(store, ports[i], room)));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-fleet-nginx-'));
  const nginx = await Nginx.start(
    bin,
    dir,
    nginxPort,
    routerConfig({ dir, port: nginxPort, upstreams: ports.map((p) => `127.0.0.1:${p}`), balancing }),
  );
  const fleet: Fleet = {
    store,
    servers,
    ports,
    nginx,
    dir,
    nginxPort,
    balancing,
    base: `http://127.0.0.1:${nginxPort}`,
    stop: async () => {
      await nginx.stop();
      await Promise.all(fleet.servers.map((s) => s.stop()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return fleet;
}

interface HitWindow {
  hitRatio: number;
  p50: number;
  p99: number;
}

async function measureHits(
  fleet: Fleet,
  models: readonly string[],
): Promise<HitWindow & { replicaOf: Map<string, string> }> {
  const before = await Promise.all(fleet.servers.map(counters));
  const { latencies, replicaOf } = await drive(fleet.base, models);
  const after = await Promise.all(fleet.servers.map(counters));
  return { hitRatio: hitRatioBetween(before, after), ...percentiles(latencies), replicaOf };
}

/**
 * The consistent-hash fleet loses its last instance the way Kubernetes removes a pod (the router's
 * upstream list drops it, then the process gets SIGTERM), and gets an empty one back on the same address.
 */
async function leaveAndReturn(
  fleet: Fleet,
  steady: Map<string, string>,
  gone: string[],
  back: string[],
): Promise<string[]> {
  const upstreams = fleet.ports.map((p) => `127.0.0.1:${p}`);
  const leaving = upstreams.at(-1)!;
  const reconfigure = (list: string[]) =>
    fleet.nginx.reload(
      routerConfig({ dir: fleet.dir, port: fleet.nginxPort, upstreams: list, balancing: fleet.balancing }),
    );

  await reconfigure(upstreams.slice(0, -1));
  const departed = fleet.servers.pop()!;
  await departed.stop();
  const during = await measureHits(fleet, gone);
  const seenBoth = [...during.replicaOf.keys()].filter((m) => steady.has(m));
  const moved = seenBoth.filter((m) => steady.get(m) !== during.replicaOf.get(m));
  const notLeavers = moved.filter((m) => steady.get(m) !== leaving).length;

  fleet.servers.push(await startInstance(fleet.store, fleet.ports.at(-1)!, ROOM));
  await reconfigure(upstreams);
  const after = await measureHits(fleet, back);
  const returned = [...after.replicaOf].filter(
    ([m, r]) => r === leaving && during.replicaOf.has(m) && during.replicaOf.get(m) !== r,
  ).length;
  const elsewhere = [...after.replicaOf].filter(([m, r]) => steady.has(m) && steady.get(m) !== r).length;
  const window = (w: HitWindow, n: number) =>
    `hit ratio over the next ${n} requests ${pct(w.hitRatio)}, p50 ${w.p50.toFixed(2)} ms, p99 ${w.p99.toFixed(2)} ms`;
  return [
    `instance leaves (router reload without it, then SIGTERM): ${moved.length} of the ${seenBoth.length} models requested before and during moved, ` +
      `${notLeavers === 0 ? "all of them the leaver's" : `${notLeavers} of them not the leaver's`}; ${window(during, gone.length)}`,
    `instance returns empty on the same address (router reload): ${returned} models moved back to it, ${elsewhere} sit elsewhere than before it left; ${window(after, back.length)}`,
  ];
}

async function main(): Promise<void> {
  const bin = requireProgram('nginx');
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-fleet-store-'));
  writeMlpStore(store, MODELS);
  const stream = zipfStream();
  const compared = stream.slice(0, REQUESTS);
  const results: Record<string, HitWindow> = {};
  const extra: string[] = [];
  try {
    for (const [label, rooms, balancing] of [
      ['consistent-hash', Array(INSTANCES).fill(ROOM), 'consistent-hash'],
      ['round-robin', Array(INSTANCES).fill(ROOM), 'round-robin'],
      ['one instance with 3x room', [INSTANCES * ROOM], 'round-robin'],
    ] as const) {
      log(
        `${label}: ${rooms.length} instance(s) with room for ${rooms[0]} models, ${compared.length} requests over ${MODELS} models (Zipf s=${ZIPF_S}) …`,
      );
      const fleet = await startFleet(bin, store, [...rooms], balancing);
      try {
        const m = await measureHits(fleet, compared);
        results[label] = m;
        if (label === 'consistent-hash') {
          log('consistent-hash: an instance leaves and comes back …');
          extra.push(
            ...(await leaveAndReturn(
              fleet,
              m.replicaOf,
              stream.slice(REQUESTS, REQUESTS + CHANGE_REQUESTS),
              stream.slice(REQUESTS + CHANGE_REQUESTS),
            )),
          );
        }
      } finally {
        await fleet.stop();
      }
    }
  } finally {
    fs.rmSync(store, { recursive: true, force: true });
  }
  const [x, y, z] = ['consistent-hash', 'round-robin', 'one instance with 3x room'].map((k) => results[k]);
  console.log(
    `fleet: consistent-hash hit ratio ${(x.hitRatio * 100).toFixed(1)} %, round-robin ${(y.hitRatio * 100).toFixed(1)} %, one instance with 3x room ${(z.hitRatio * 100).toFixed(1)} %`,
  );
  for (const [label, r] of Object.entries(results))
    console.log(`  ${label}: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`);
  const ratioMet = x.hitRatio >= 1.5 * y.hitRatio;
  const nearMet = x.hitRatio * 100 >= z.hitRatio * 100 - 10;
  console.log(
    `targets: X ≥ 1.5·Y (${(x.hitRatio / y.hitRatio).toFixed(2)}×) ${ratioMet ? '✅' : '❌'}; X ≥ Z − 10 (${((x.hitRatio - z.hitRatio) * 100).toFixed(1)} points) ${nearMet ? '✅' : '❌'}`,
  );
  for (const line of extra) console.log(line);
  if (!ratioMet || !nearMet) process.exitCode = 1;
}

const USAGE = benchUsage(
  'npm run bench:fleet [-- shared] [-- hot]',
  "Three instances behind nginx (installed from Debian when missing and root): model-hashing against round robin and one bigger instance; `shared` puts each instance's models in shared hosts (worker_mode=shared); `hot` runs the skewed workloads through round robin, nginx's consistent hashing and HAProxy's bounded loads (scripts/bench/fleet/hot.ts), printing JSON.",
);

if (require.main === module) runBench(USAGE, process.argv.includes('hot') ? hotMain : main, () => undefined);
