/**
 * gRPC against HTTP in the same run, on one server:
 *   - throughput: KServe ModelInfer with raw contents vs HTTP JSON invoke, tiny MLP 16→32→4, one
 *     worker, 16 requests in flight (one HTTP/2 channel for gRPC, 16 connections for HTTP);
 *   - streaming: TorchServe StreamPredictions' first message vs HTTP chunked streaming's first
 *     chunk, example text-generator, 32 tokens, one request at a time.
 */
import fs from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { streamInvoke } from '../../../harness/stream-client';
import { connect, unaryCall, type GrpcClients, type ServiceClient } from '../../../src/cli/grpc-calls';
import { cpuMicros, descendantsOf } from '../../../harness/process-probes';
import { Flags, UsageError } from '../../cli-flags';
import {
  benchDurations,
  benchUsage,
  cpuPerRequest,
  measure,
  runBench,
  startBenchServer,
  type BenchServer,
} from '../kit/bench-run';
import { hammer } from '../../../harness/load-generator';
import { f32 } from '../../../harness/float32';
import { median } from '../../../harness/statistics';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { kRepoRoot } from '../../../harness/repo-root';

export interface PacedCpu {
  /** Server + workers CPU per request, µs, each side's idle CPU taken off: median over the repetitions. */
  httpJsonMicros: number;
  grpcRawMicros: number;
  /** The server process alone (no workers), µs per request. */
  httpJsonServerMicros: number;
  grpcRawServerMicros: number;
  /** gRPC over HTTP per repetition (each pair measured back to back), server + workers and server alone. */
  ratios: number[];
  serverRatios: number[];
}

export interface GrpcBenchResult {
  httpJsonRps: number;
  grpcRawRps: number;
  ratio: number;
  /** CPU of the server and its workers per request, µs (from /proc): the client's own cost left out. */
  httpJsonCpuMicros: number;
  grpcRawCpuMicros: number;
  cpuRatio: number;
  /**
   * The same at one offered rate for both (`pacedRate` req/s, below what the gRPC client reaches):
   * at full speed HTTP's clients send 4× more requests a second, so more of them share each
   * wake-up, read and write, and the per-request figures above compare two different loads.
   */
  pacedRate: number;
  /** The server's CPU with no requests, µs a second, taken off the paced figures. */
  idleMicrosPerSecond: number;
  pacedHttpJsonCpuMicros: number;
  pacedGrpcRawCpuMicros: number;
  pacedCpuRatio: number;
  /** The paced figures in full: the server alone, and each repetition's ratio (their spread). */
  paced: PacedCpu;
  tokens: number;
  grpcFirstMessageMs: number;
  httpFirstChunkMs: number;
}

const kConcurrency = 16;

async function freePort(): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** `kConcurrency` callers, each sending its next request when the last is answered, for `seconds`. */
async function grpcRps(client: ServiceClient, request: unknown, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: kConcurrency }, async () => {
      while (performance.now() < end) {
        await unaryCall(client, 'ModelInfer', request);
        done++;
      }
    }),
  );
  return done / seconds;
}

/** `rate` calls of `one` a second for `seconds`, at most kConcurrency in flight; resolves with the calls made. */
async function paced(rate: number, seconds: number, one: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  const total = Math.round(rate * seconds);
  let sent = 0;
  let inFlight = 0;
  let done = 0;
  await new Promise<void>((resolve, reject) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate));
      for (; sent < due && inFlight < kConcurrency; sent++) {
        inFlight++;
        one().then(
          () => {
            inFlight--;
            if (++done === total) {
              clearInterval(tick);
              resolve();
            }
          },
          (err: unknown) => {
            clearInterval(tick);
            reject(err instanceof Error ? err : new Error(String(err)));
          },
        );
      }
    }, 5);
  });
  return done;
}

/** One keep-alive HTTP POST, its answer read to the end; rejects on a non-200. */
function httpPost(url: string, body: string, agent: Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`HTTP invoke answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function firstMessage(client: ServiceClient, request: unknown): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let first = 0;
    const call = client.StreamPredictions(request);
    call.on('data', () => (first ||= performance.now() - t0));
    call.on('error', reject);
    call.on('end', () => resolve(first));
  });
}

/** Server and server + workers CPU of one run of `run`, µs per request, `idle` (µs a second of each) taken off. */
async function cpuSplit(
  pid: number,
  run: () => Promise<number>,
  idle = { tree: 0, server: 0 },
): Promise<{ tree: number; server: number }> {
  const tree = () => [pid, ...descendantsOf(pid)].reduce((sum, p) => sum + cpuMicros(p), 0);
  const [tree0, server0, t0] = [tree(), cpuMicros(pid), performance.now()];
  const requests = await run();
  const seconds = (performance.now() - t0) / 1000;
  return {
    tree: (tree() - tree0 - idle.tree * seconds) / requests,
    server: (cpuMicros(pid) - server0 - idle.server * seconds) / requests,
  };
}

/** What the paced comparison needs: a server with the tiny MLP loaded, and one request of each protocol. */
interface Bench {
  server: BenchServer;
  clients: GrpcClients;
  httpBody: string;
  infer: unknown;
}

/** `main`: another build's dist/src/main.js (as MME_BENCH_MAIN), for a before/after in one run. */
async function startBench(settings: BenchSettings, main?: string): Promise<Bench> {
  const port = await freePort();
  const own = process.env.MME_BENCH_MAIN;
  if (main) process.env.MME_BENCH_MAIN = main;
  const server = await startBenchServer([`grpc_inference_port=${port}`], { settings }).finally(() => {
    if (own === undefined) delete process.env.MME_BENCH_MAIN;
    else process.env.MME_BENCH_MAIN = own;
  });
  const clients = connect(`127.0.0.1:${port}`);
  const dir = writeTinyMlp(server.store);
  await server.loadModel({ model_name: 'tiny', url: dir });
  const row = Array.from({ length: 16 }, (_, i) => i / 16);
  return {
    server,
    clients,
    httpBody: JSON.stringify({ inputs: { input: [row] } }),
    infer: {
      model_name: 'tiny',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16] }],
      raw_input_contents: [f32(row)],
    },
  };
}

type Split = { tree: number; server: number };

/**
 * Both protocols at `rate` req/s on each server of `benches`, `reps` rounds of `seconds` a run;
 * each round runs every server's pair back to back, so all of them see the same machine load.
 * `only` runs one protocol (a profile of one side's path: MME_BENCH_PROFILE).
 */
async function pacedCpu(
  benches: Bench[],
  rate: number,
  d: { seconds: number; reps: number },
  only?: 'grpc' | 'http',
): Promise<Array<PacedCpu & { idle: Split }>> {
  const sides = [];
  for (const b of benches) {
    const pid = b.server.child.pid!;
    // At a paced rate the server's own timers (metrics sampler, health checks) weigh on each request: measured idle, taken off.
    const idle = await cpuSplit(pid, async () => {
      await new Promise((r) => setTimeout(r, d.seconds * 1000));
      return d.seconds;
    });
    const agent = new Agent({ keepAlive: true, maxSockets: kConcurrency });
    const post = () => httpPost(`${b.server.url}/models/tiny/invoke`, b.httpBody, agent);
    const infer = () => unaryCall(b.clients.kserve, 'ModelInfer', b.infer);
    sides.push({ pid, idle, agent, post, infer, http: [] as Split[], grpc: [] as Split[] });
  }
  for (let i = 0; i < d.reps; i++) {
    for (const s of sides) {
      if (only !== 'grpc') s.http.push(await cpuSplit(s.pid, () => paced(rate, d.seconds, s.post), s.idle));
      if (only !== 'http') s.grpc.push(await cpuSplit(s.pid, () => paced(rate, d.seconds, s.infer), s.idle));
    }
  }
  const med = (xs: Split[], k: keyof Split) => (xs.length > 0 ? median(xs.map((x) => x[k])) : Number.NaN);
  return sides.map(({ idle, agent, http, grpc }) => {
    agent.destroy();
    return {
      idle,
      httpJsonMicros: med(http, 'tree'),
      grpcRawMicros: med(grpc, 'tree'),
      httpJsonServerMicros: med(http, 'server'),
      grpcRawServerMicros: med(grpc, 'server'),
      ratios: only ? [] : grpc.map((g, i) => g.tree / http[i].tree),
      serverRatios: only ? [] : grpc.map((g, i) => g.server / http[i].server),
    };
  });
}

function durations(quick: boolean): { seconds: number; reps: number; warmupSeconds: number } {
  return quick ? { seconds: 2, reps: 1, warmupSeconds: 1 } : benchDurations();
}

/** `quick`: short runs that only check the harness works (as BENCH_QUICK=1). */
export async function benchGrpc(opts: { quick?: boolean; settings?: BenchSettings } = {}): Promise<GrpcBenchResult> {
  const quick = opts.quick ?? Boolean(process.env.BENCH_QUICK);
  const b = await startBench(opts.settings ?? settingsFromEnv());
  const { server, clients, httpBody, infer } = b;
  try {
    const gen = path.join(server.store, 'text-generator');
    fs.cpSync(path.join(kRepoRoot, 'model-store', 'text-generator'), gen, { recursive: true });
    await server.loadModel({ model_name: 'gen', url: gen });

    const d = durations(quick);
    const http = await measure(`${server.url}/models/tiny/invoke`, httpBody, kConcurrency, d);
    if (http.errors + http.non2xx > 0) throw new Error(`HTTP invoke failed ${http.errors + http.non2xx} times`);
    await grpcRps(clients.kserve, infer, d.warmupSeconds);
    const runs: number[] = [];
    for (let i = 0; i < d.reps; i++) runs.push(await grpcRps(clients.kserve, infer, d.seconds));
    const grpcRawRps = median(runs);
    const pid = server.child.pid!;
    const httpJsonCpuMicros = await cpuPerRequest(
      pid,
      async () =>
        (await hammer(`${server.url}/models/tiny/invoke`, httpBody, { connections: kConcurrency, seconds: d.seconds }))
          .rps * d.seconds,
    );
    const grpcRawCpuMicros = await cpuPerRequest(
      pid,
      async () => (await grpcRps(clients.kserve, infer, d.seconds)) * d.seconds,
    );
    const pacedRate = Math.max(100, Math.round((grpcRawRps * 0.6) / 100) * 100);
    const [p] = await pacedCpu([b], pacedRate, d);

    const tokens = 32;
    const body = JSON.stringify({ prompt: 'hello', max_tokens: tokens });
    const requests = quick ? 10 : 50;
    const grpcFirst: number[] = [];
    const httpFirst: number[] = [];
    // Alternating, so both see the same machine load; the first three of each warm up.
    for (let i = 0; i < requests + 3; i++) {
      const g = await firstMessage(clients.torchserve, { model_name: 'gen', input: { data: Buffer.from(body) } });
      const h = await streamInvoke(`${server.url}/models/gen/invoke`, body);
      if (h.status !== 200 || !h.complete) throw new Error(`stream answered ${h.status}`);
      if (i < 3) continue;
      grpcFirst.push(g);
      httpFirst.push(h.firstChunkMs);
    }
    const { idle, ...paced } = p;
    return {
      httpJsonRps: http.rps,
      grpcRawRps,
      ratio: grpcRawRps / http.rps,
      httpJsonCpuMicros,
      grpcRawCpuMicros,
      cpuRatio: grpcRawCpuMicros / httpJsonCpuMicros,
      pacedRate,
      idleMicrosPerSecond: idle.tree,
      pacedHttpJsonCpuMicros: paced.httpJsonMicros,
      pacedGrpcRawCpuMicros: paced.grpcRawMicros,
      pacedCpuRatio: paced.grpcRawMicros / paced.httpJsonMicros,
      paced,
      tokens,
      grpcFirstMessageMs: median(grpcFirst),
      httpFirstChunkMs: median(httpFirst),
    };
  } finally {
    clients.close();
    await server.stop();
  }
}

interface PacedRun extends PacedCpu {
  idleMicrosPerSecond: number;
  serverIdleMicrosPerSecond: number;
  serverRatio: number;
}

/**
 * Only the paced comparison, at a rate chosen up front, or for one protocol (what a CPU profile of
 * one side's path needs). `compare`: another build's dist/src/main.js, run beside this one round
 * by round (`before`), for a before/after whose figures come from one run.
 */
export async function benchGrpcPaced(opts: {
  rate: number;
  seconds: number;
  reps: number;
  only?: 'grpc' | 'http';
  compare?: string;
}): Promise<{ rate: number; after: PacedRun; before?: PacedRun }> {
  const benches: Bench[] = [];
  try {
    const settings = settingsFromEnv();
    benches.push(await startBench(settings));
    if (opts.compare) benches.push(await startBench(settings, opts.compare));
    // Warm-up: the first calls compile both paths.
    await pacedCpu(benches, opts.rate, { seconds: 1, reps: 1 }, opts.only);
    const [after, before] = (await pacedCpu(benches, opts.rate, opts, opts.only)).map(
      ({ idle, ...p }): PacedRun => ({
        idleMicrosPerSecond: idle.tree,
        serverIdleMicrosPerSecond: idle.server,
        serverRatio: median(p.serverRatios),
        ...p,
      }),
    );
    return { rate: opts.rate, after, ...(before ? { before } : {}) };
  } finally {
    for (const b of benches) {
      b.clients.close();
      await b.server.stop();
    }
  }
}

const USAGE = `${benchUsage(
  'npm run bench:grpc [-- --paced [--rate N] [--seconds N] [--reps N] [--only grpc|http] [--compare MAIN]]',
  'gRPC ModelInfer against HTTP JSON invoke, and gRPC streaming against HTTP chunked.',
)}
  --paced              only the server CPU per request at one offered rate for both (default 600 req/s,
                       5 rounds of 8 s); --only runs one protocol, for a profile of its path;
                       --compare runs another build's dist/src/main.js beside this one, round by round`;

const kFlags = {
  paced: 'boolean',
  rate: 'string',
  seconds: 'string',
  reps: 'string',
  only: 'string',
  compare: 'string',
} as const;

async function main(): Promise<unknown> {
  const flags = Flags.parse(process.argv.slice(2), kFlags);
  if (!flags.has('paced')) return benchGrpc();
  const only = flags.string('only');
  if (only !== undefined && only !== 'grpc' && only !== 'http')
    throw new UsageError(`--only must be grpc or http, got ${JSON.stringify(only)}`);
  return benchGrpcPaced({
    rate: flags.int('rate', 600, 1),
    seconds: flags.number('seconds', 8, 1),
    reps: flags.int('reps', 5, 1),
    only,
    compare: flags.string('compare'),
  });
}

if (require.main === module) runBench(USAGE, main);
