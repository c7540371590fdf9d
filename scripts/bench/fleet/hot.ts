/**
 * `npm run bench:fleet -- hot`: the fleet under a skewed load. Three instances (room for ROOM models
 * each, INSTANCE_CPUS CPUs each as a pod's limit) serve MODELS models behind each router in turn:
 * nginx consistent hashing on the model (deploy/nginx), nginx round robin, and HAProxy's consistent
 * hashing with bounded loads (deploy/haproxy) at three balance factors. Two workloads: (a) the Zipf
 * stream of the plain fleet bench; (b) the same with one model at HOT_SHARE of the requests. Each is
 * sent closed-loop (CLIENTS clients), then open-loop at two fixed rates (the same for every router).
 * For each: every instance's share of the requests and of the CPU (the server and its workers), the
 * fleet's hit ratio (the servers' own counters), p50/p99/p99.9 at the client, and every failure by
 * status. In (b) an instance is then killed (SIGKILL) halfway through the closed-loop stream: the
 * requests that fail and the models that move. Prints one JSON document (with the commit and the
 * machine) on stdout.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePorts } from '../../../harness/cli-server';
import { cpuMicros, descendantsOf } from '../../../harness/process-probes';
import { seededRandom, shuffled, zipfSampler } from '../../../harness/random';
import { cpuLimit } from './cpu-limit';
import { Haproxy, localHaproxyConfig } from '../../../harness/routers/haproxy';
import { Nginx, routerConfig } from '../../../harness/routers/nginx';
import { requireProgram } from './require-program';
import type { BenchServer } from '../kit/bench-run';
import { counters, hitRatioBetween, post, startInstance, WORKER_MODE } from './instances';
import { openLoop, percentiles } from '../kit/latency';
import { MLP_STORE_BODY, writeMlpStore } from '../kit/mlp-store';

const MODELS = 300;
const ROOM = 10;
const INSTANCES = 3;
const ZIPF_S = 0.9;
const HOT_SHARE = 0.4;
const REQUESTS = process.env.BENCH_QUICK ? 600 : 3000;
/**
 * Enough requests in flight for a bound on each instance's share of them to matter, and below each
 * instance's room: more distinct models in flight on one instance than it may hold wait for each
 * other's loads, which measures the cache's room, not the router.
 */
const CLIENTS = 6;
/** Each instance's CPU limit, as a pod's: the instances do not share the machine's cores (scripts/bench/fleet/cpu-limit.ts). */
const INSTANCE_CPUS = 0.5;
/** Why the instances ran without their CPU limit, when they did (not root, no cgroup). */
let unlimitedBecause: string | undefined;
const SEED = 11;
/**
 * The open-loop stretches' rates, as shares of what the fleet served closed-loop behind plain
 * consistent hashing (the first router), the baseline: with a hot model that is what its instance
 * serves flat out, so 1× is as much as plain hashing sustains, and 0.8× a load it carries with room.
 * (Round robin's rate, the first anchor tried, moved with its hit ratio: 151-193 req/s between runs.)
 */
const PACES = [0.8, 1];
const PACED_MS = process.env.BENCH_QUICK ? 4000 : 10_000;

export type RouterKind = 'round-robin' | 'consistent-hash' | `bounded-${number}`;
const FACTORS = [125, 150, 200];
const ROUTERS: readonly RouterKind[] = [
  'consistent-hash',
  'round-robin',
  ...FACTORS.map((f) => `bounded-${f}` as const),
];

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The Zipf stream; with `hot`, each request is for the most popular model with probability HOT_SHARE instead. */
function stream(hot: boolean, seed: number, length: number): string[] {
  const random = seededRandom(seed);
  const byRank = shuffled(MODELS, random);
  const rank = zipfSampler(MODELS, ZIPF_S, random);
  return Array.from({ length }, () => `m${byRank[hot && random() < HOT_SHARE ? 0 : rank()]}`);
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
  /** Why they failed: the status, or the network error's code, with how many. */
  failures: Record<string, number>;
  byReplica: Map<string, number>;
  /** The replica that served each model last. */
  replicaOf: Map<string, string>;
}

const emptyServed = (): Served => ({
  latencies: [],
  failed: 0,
  failures: {},
  byReplica: new Map(),
  replicaOf: new Map(),
});

type Answer = Awaited<ReturnType<typeof post>> | string;

/** One request for `model` through the router: its answer, or the network error's code. */
const invoke = (agent: http.Agent, base: string, model: string): Promise<Answer> =>
  post(agent, `${base}/models/${model}/invoke`, {}, MLP_STORE_BODY).catch(
    (err: NodeJS.ErrnoException) => err.code ?? err.message,
  );

function record(out: Served, model: string, res: Answer, ms: number): void {
  if (typeof res === 'string' || res.status !== 200) {
    const why = typeof res === 'string' ? res : String(res.status);
    out.failed++;
    out.failures[why] = (out.failures[why] ?? 0) + 1;
    if (typeof res !== 'string') log(`${model}: ${res.status} from ${res.replica}: ${res.text.slice(0, 200)}`);
    return;
  }
  out.latencies.push(ms);
  out.byReplica.set(res.replica, (out.byReplica.get(res.replica) ?? 0) + 1);
  out.replicaOf.set(model, res.replica);
}

/** Sends `models` through the router from CLIENTS closed-loop clients; failures are counted, not thrown. */
async function drive(base: string, models: readonly string[]): Promise<Served> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
  const out = emptyServed();
  let next = 0;
  const client = async () => {
    while (next < models.length) {
      const model = models[next++];
      const t0 = performance.now();
      record(out, model, await invoke(agent, base, model), performance.now() - t0);
    }
  };
  try {
    await Promise.all(Array.from({ length: CLIENTS }, client));
  } finally {
    agent.destroy();
  }
  return out;
}

/** Sends `models` through the router at `rps`, open loop: the queue a slow instance builds shows in the latencies. */
async function pace(base: string, models: readonly string[], rps: number): Promise<Served> {
  const agent = new http.Agent({ keepAlive: true });
  const out = emptyServed();
  let next = 0;
  try {
    const sent = await openLoop(rps, (models.length / rps) * 1000, async () => {
      const model = models[next++ % models.length];
      return { model, res: await invoke(agent, base, model) };
    });
    for (const { ms, result } of sent) record(out, result.model, result.res, ms);
  } finally {
    agent.destroy();
  }
  return out;
}

/** CPU time of each instance's server and workers, µs. */
const treeCpu = (servers: readonly BenchServer[]) =>
  servers.map((s) => [s.pid, ...descendantsOf(s.pid)].reduce((sum, pid) => sum + cpuMicros(pid), 0));

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

export interface Measured {
  requestShare: number[];
  cpuShare: number[];
  /** The busiest instance's share of requests over the mean share. */
  busiestOverMean: number;
  requestsPerSecond: number;
  hitRatio: number;
  p50: number;
  p99: number;
  p999: number;
  failed: number;
  /** Why they failed: the status, or the network error's code, with how many. */
  failures: Record<string, number>;
}

/** One stretch of the stream through the router (`send` sends it): shares, hit ratio, latency. */
async function measure(
  servers: BenchServer[],
  router: Router,
  send: () => Promise<Served>,
): Promise<Measured & Served> {
  const [cpu0, c0] = [treeCpu(servers), await Promise.all(servers.map(counters))];
  const t0 = performance.now();
  const served = await send();
  const seconds = (performance.now() - t0) / 1000;
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
    requestsPerSecond: round(total / seconds, 1),
    hitRatio: round(hitRatioBetween(c0, c1)),
    p50: round(p50, 2),
    p99: round(p99, 2),
    p999: round(p999, 2),
    failed: served.failed,
  };
}

export interface Killed {
  /** Requests after the kill that got no 200 (the killed instance's in-flight ones and any misrouted after). */
  failed: number;
  failures: Record<string, number>;
  /** Models requested before and after the kill that are now served elsewhere. */
  moved: number;
  /** Of those, how many were not the killed instance's. */
  movedNotKilled: number;
  modelsSeenBoth: number;
}

/** The open-loop stretch: its models and rate, chosen once the closed loop has measured the router. */
type Paced = (closed: Measured) => Array<{ models: string[]; rps: number }>;

export type AtRate = Measured & { rps: number };

/** One router's figures for one workload, as the JSON keeps them (`killed` in the hot workload only). */
export interface RouterRun {
  measured: Measured;
  paced: AtRate[];
  killed?: Killed;
}

/** Without the fields that are per request or per model: what the JSON keeps. */
function summary({ replicaOf: _r, latencies: _l, byReplica: _b, ...m }: Measured & Served): Measured {
  return m;
}

async function run(
  kind: RouterKind,
  store: string,
  models: readonly string[],
  paced: Paced,
  kill: boolean,
): Promise<RouterRun> {
  const ports = await freePorts(INSTANCES);
  const limits = ports.map((_, i) => cpuLimit(`mme-fleet-${i + 1}`, INSTANCE_CPUS));
  const launchers = limits.map((l) => ('launcher' in l ? l.launcher : undefined));
  for (const l of limits)
    if ('reason' in l && !unlimitedBecause) log(`instances not CPU-limited: ${(unlimitedBecause = l.reason)}`);
  const servers = await Promise.all(ports.map((p, i) => startInstance(store, p, ROOM, launchers[i])));
  const router = await startRouter(kind, ports);
  try {
    const half = kill ? models.length / 2 : models.length;
    const closed = await measure(servers, router, () => drive(router.base, models.slice(0, half)));
    const measured = summary(closed);
    const atRates: AtRate[] = [];
    for (const open of paced(measured)) {
      const atRate = {
        rps: open.rps,
        ...summary(await measure(servers, router, () => pace(router.base, open.models, open.rps))),
      };
      log(`${kind}, open loop at ${open.rps} req/s: ${JSON.stringify(atRate)}`);
      atRates.push(atRate);
    }
    if (!kill) return { measured, paced: atRates };
    // The last instance dies at once (its workers with it: they die with their parent), mid-stream.
    const victim = servers.at(-1)!;
    const rest = drive(router.base, models.slice(half));
    await new Promise((r) => setTimeout(r, 200));
    victim.child.kill('SIGKILL');
    const after = await rest;
    const replicaOf = closed.replicaOf;
    const seenBoth = [...after.replicaOf.keys()].filter((m) => replicaOf.has(m));
    const moved = seenBoth.filter((m) => replicaOf.get(m) !== after.replicaOf.get(m));
    return {
      measured,
      paced: atRates,
      killed: {
        failed: after.failed,
        failures: after.failures,
        moved: moved.length,
        movedNotKilled: moved.filter((m) => replicaOf.get(m) !== router.names.at(-1)).length,
        modelsSeenBoth: seenBoth.length,
      },
    };
  } finally {
    await router.stop();
    await Promise.all(servers.map((s) => s.stop().catch(() => null)));
    for (const l of limits) if ('remove' in l) l.remove();
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
      const models = stream(hot, SEED, REQUESTS);
      // One rate for every router of a workload: a share of what plain consistent hashing (the first) served closed-loop.
      let rates: number[] | undefined;
      const paced: Paced = (closed) => {
        rates ??= PACES.map((p) => Math.round(p * closed.requestsPerSecond));
        return rates.map((rps, i) => ({ models: stream(hot, SEED + 1 + i, Math.ceil((rps * PACED_MS) / 1000)), rps }));
      };
      for (const kind of ROUTERS) {
        log(
          `${workload}: ${kind}, ${models.length} requests over ${MODELS} models${hot ? ` (one at ${HOT_SHARE * 100} %)` : ''} …`,
        );
        results[workload][kind] = await run(kind, store, models, paced, hot);
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
          paces: PACES,
          pacedMs: PACED_MS,
          workerMode: WORKER_MODE,
          instanceCpus: unlimitedBecause ? null : INSTANCE_CPUS,
          unlimitedBecause,
        },
        results,
      },
      null,
      2,
    ),
  );
}
