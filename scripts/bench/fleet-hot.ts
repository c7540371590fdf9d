/**
 * `npm run bench:fleet -- hot`: the fleet under a skewed load. Three instances (room for ROOM models
 * each) serve MODELS models behind each router in turn: nginx round robin, nginx consistent hashing on
 * the model (deploy/nginx), and HAProxy's consistent hashing with bounded loads (deploy/haproxy) at two
 * balance factors. Two workloads: (a) the Zipf stream of the plain fleet bench; (b) the same with one
 * model at HOT_SHARE of the requests. For each: every instance's share of the requests and of the CPU
 * (the server and its workers), the fleet's hit ratio (the servers' own counters), p50/p99/p99.9 at the
 * client. In (b) an instance is then killed (SIGKILL) halfway through: the requests that fail and the
 * models that move. Prints one JSON document (with the commit and the machine) on stdout.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePorts } from '../../harness/cli-server';
import { cpuMicros, descendantsOf } from '../../harness/process-probes';
import { seededRandom, shuffled, zipfSampler } from '../../harness/random';
import { Haproxy, localHaproxyConfig } from '../fleet/haproxy';
import { Nginx, routerConfig } from '../fleet/nginx';
import { requireProgram } from '../fleet/router-process';
import type { BenchServer } from './bench-run';
import { counters, hitRatioBetween, post, startInstance, WORKER_MODE } from './fleet-instances';
import { percentiles } from './latency';
import { MLP_STORE_BODY, writeMlpStore } from './mlp-store';

const MODELS = 300;
const ROOM = 10;
const INSTANCES = 3;
const ZIPF_S = 0.9;
const HOT_SHARE = 0.4;
const REQUESTS = process.env.BENCH_QUICK ? 600 : 3000;
/** Enough requests in flight for a bound on each instance's share of them to matter. */
const CLIENTS = 6;
const SEED = 11;

type RouterKind = 'round-robin' | 'consistent-hash' | 'bounded-125' | 'bounded-150';
const ROUTERS: readonly RouterKind[] = ['round-robin', 'consistent-hash', 'bounded-125', 'bounded-150'];

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The Zipf stream; with `hot`, each request is for the most popular model with probability HOT_SHARE instead. */
function stream(hot: boolean): string[] {
  const random = seededRandom(SEED);
  const byRank = shuffled(MODELS, random);
  const rank = zipfSampler(MODELS, ZIPF_S, random);
  return Array.from({ length: REQUESTS }, () => `m${byRank[hot && random() < HOT_SHARE ? 0 : rank()]}`);
}

interface Router {
  base: string;
  /** The replica names the router reports (X-Upstream), by instance index. */
  names: string[];
  stop(): Promise<void>;
}

async function startRouter(kind: RouterKind, ports: readonly number[]): Promise<Router> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-fleet-hot-'));
  const [port, grpcPort] = await freePorts(2);
  let proxy: Nginx | Haproxy;
  let names: string[];
  if (kind === 'round-robin' || kind === 'consistent-hash') {
    const upstreams = ports.map((p) => `127.0.0.1:${p}`);
    const config = routerConfig({ dir, port, upstreams, balancing: kind });
    proxy = await Nginx.start(requireProgram('nginx'), dir, port, config);
    names = upstreams;
  } else {
    const config = localHaproxyConfig({
      httpPort: port,
      grpcPort,
      replicas: ports.map((httpPort) => ({ httpPort })),
      balanceFactor: Number(kind.slice('bounded-'.length)),
    });
    proxy = await Haproxy.start(requireProgram('haproxy'), dir, port, config);
    names = ports.map((_, i) => `mme-${i + 1}`);
  }
  return {
    base: `http://127.0.0.1:${port}`,
    names,
    stop: async () => {
      await proxy.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Served {
  latencies: number[];
  /** Requests that got no 200: status or network error. */
  failed: number;
  byReplica: Map<string, number>;
  /** The replica that served each model last. */
  replicaOf: Map<string, string>;
}

/** Sends `models` through the router from CLIENTS closed-loop clients; failures are counted, not thrown. */
async function drive(base: string, models: readonly string[]): Promise<Served> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const out: Served = { latencies: [], failed: 0, byReplica: new Map(), replicaOf: new Map() };
  let next = 0;
  const client = async () => {
    while (next < models.length) {
      const model = models[next++];
      const t0 = performance.now();
      const res = await post(agent, `${base}/models/${model}/invoke`, {}, MLP_STORE_BODY).catch(() => null);
      if (res?.status !== 200) {
        out.failed++;
        continue;
      }
      out.latencies.push(performance.now() - t0);
      out.byReplica.set(res.replica, (out.byReplica.get(res.replica) ?? 0) + 1);
      out.replicaOf.set(model, res.replica);
    }
  };
  try {
    await Promise.all(Array.from({ length: CLIENTS }, client));
  } finally {
    agent.destroy();
  }
  return out;
}

/** CPU time of each instance's server and workers, µs. */
const treeCpu = (servers: readonly BenchServer[]) =>
  servers.map((s) => [s.pid, ...descendantsOf(s.pid)].reduce((sum, pid) => sum + cpuMicros(pid), 0));

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

interface Measured {
  requestShare: number[];
  cpuShare: number[];
  /** The busiest instance's share of requests over the mean share. */
  busiestOverMean: number;
  hitRatio: number;
  p50: number;
  p99: number;
  p999: number;
  failed: number;
}

/** One stretch of the stream through the router: shares, hit ratio, latency. */
async function measure(servers: BenchServer[], router: Router, models: readonly string[]): Promise<Measured & Served> {
  const [cpu0, c0] = [treeCpu(servers), await Promise.all(servers.map(counters))];
  const served = await drive(router.base, models);
  const [cpu1, c1] = [treeCpu(servers), await Promise.all(servers.map(counters))];
  const requests = router.names.map((n) => served.byReplica.get(n) ?? 0);
  const total = requests.reduce((a, b) => a + b, 0);
  const cpu = cpu1.map((c, i) => c - cpu0[i]);
  const cpuTotal = cpu.reduce((a, b) => a + b, 0);
  const { p50, p99, p999 } = percentiles(served.latencies);
  return {
    ...served,
    requestShare: requests.map((r) => round(r / total)),
    cpuShare: cpu.map((c) => round(c / cpuTotal)),
    busiestOverMean: round(Math.max(...requests) / (total / requests.length)),
    hitRatio: round(hitRatioBetween(c0, c1)),
    p50: round(p50, 2),
    p99: round(p99, 2),
    p999: round(p999, 2),
    failed: served.failed,
  };
}

interface Killed {
  /** Requests after the kill that got no 200 (the killed instance's in-flight ones and any misrouted after). */
  failed: number;
  /** Models requested before and after the kill that are now served elsewhere. */
  moved: number;
  /** Of those, how many were not the killed instance's. */
  movedNotKilled: number;
  modelsSeenBoth: number;
}

async function run(
  kind: RouterKind,
  store: string,
  models: readonly string[],
  kill: boolean,
): Promise<{ measured: Measured; killed?: Killed }> {
  const ports = await freePorts(INSTANCES);
  const servers = await Promise.all(ports.map((p) => startInstance(store, p, ROOM)));
  const router = await startRouter(kind, ports);
  try {
    const half = kill ? models.length / 2 : models.length;
    const {
      replicaOf,
      latencies: _l,
      byReplica: _b,
      ...measured
    } = await measure(servers, router, models.slice(0, half));
    if (!kill) return { measured };
    // The last instance dies at once (its workers with it: they die with their parent), mid-stream.
    const victim = servers.at(-1)!;
    const rest = drive(router.base, models.slice(half));
    await new Promise((r) => setTimeout(r, 200));
    victim.child.kill('SIGKILL');
    const after = await rest;
    const seenBoth = [...after.replicaOf.keys()].filter((m) => replicaOf.has(m));
    const moved = seenBoth.filter((m) => replicaOf.get(m) !== after.replicaOf.get(m));
    return {
      measured,
      killed: {
        failed: after.failed,
        moved: moved.length,
        movedNotKilled: moved.filter((m) => replicaOf.get(m) !== router.names.at(-1)).length,
        modelsSeenBoth: seenBoth.length,
      },
    };
  } finally {
    await router.stop();
    await Promise.all(servers.map((s) => s.stop().catch(() => null)));
  }
}

export async function hotMain(): Promise<void> {
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-fleet-hot-store-'));
  writeMlpStore(store, MODELS);
  const results: Record<string, Record<string, unknown>> = { zipf: {}, hot: {} };
  try {
    for (const [workload, hot] of [
      ['zipf', false],
      ['hot', true],
    ] as const) {
      const models = stream(hot);
      for (const kind of ROUTERS) {
        log(
          `${workload}: ${kind}, ${models.length} requests over ${MODELS} models${hot ? ` (one at ${HOT_SHARE * 100} %)` : ''} …`,
        );
        results[workload][kind] = await run(kind, store, models, hot);
        log(JSON.stringify(results[workload][kind]));
      }
    }
  } finally {
    fs.rmSync(store, { recursive: true, force: true });
  }
  const git = (args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  console.log(
    JSON.stringify(
      {
        bench: 'npm run bench:fleet -- hot',
        quick: Boolean(process.env.BENCH_QUICK),
        commit: git(['rev-parse', 'HEAD']),
        dirty: git(['status', '--porcelain', '--untracked-files=no']) !== '',
        date: new Date().toISOString(),
        machine: {
          cpus: os.cpus().length,
          model: os.cpus()[0]?.model,
          memoryGiB: round(os.totalmem() / 2 ** 30, 1),
          kernel: os.release(),
          node: process.version,
        },
        setup: {
          instances: INSTANCES,
          models: MODELS,
          room: ROOM,
          zipfS: ZIPF_S,
          hotShare: HOT_SHARE,
          requests: REQUESTS,
          clients: CLIENTS,
          workerMode: WORKER_MODE,
        },
        results,
      },
      null,
      2,
    ),
  );
}
