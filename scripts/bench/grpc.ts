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
import { streamInvoke } from '../../harness/stream-client';
import { connect, unaryCall, type ServiceClient } from '../../src/cli/grpc-calls';
import { benchDurations, benchUsage, cpuPerRequest, measure, runBench, startBenchServer } from './bench-run';
import { hammer } from '../../harness/load-generator';
import { median } from '../../harness/statistics';
import { postJson } from '../../harness/http-requests';
import { writeTinyMlp } from '../../harness/onnx-models';

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

export async function benchGrpc(): Promise<GrpcBenchResult> {
  const port = await freePort();
  const server = await startBenchServer([`grpc_inference_port=${port}`]);
  const clients = connect(`127.0.0.1:${port}`);
  try {
    const dir = writeTinyMlp(server.store);
    const gen = path.join(server.store, 'text-generator');
    fs.cpSync(path.join(__dirname, '..', '..', '..', 'model-store', 'text-generator'), gen, { recursive: true });
    for (const [name, url] of [
      ['tiny', dir],
      ['gen', gen],
    ]) {
      const res = await postJson(`${server.url}/models`, { model_name: name, url, initial_workers: 1 });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    }

    const row = Array.from({ length: 16 }, (_, i) => i / 16);
    const d = benchDurations();
    const httpBody = JSON.stringify({ inputs: { input: [row] } });
    const http = await measure(`${server.url}/models/tiny/invoke`, httpBody, kConcurrency, d);
    if (http.errors + http.non2xx > 0) throw new Error(`HTTP invoke failed ${http.errors + http.non2xx} times`);
    const infer = {
      model_name: 'tiny',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16] }],
      raw_input_contents: [Buffer.from(Float32Array.from(row).buffer)],
    };
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
    // At a paced rate the server's own timers (metrics sampler, health checks) weigh on each request: measured idle, taken off.
    const idleMicrosPerSecond = await cpuPerRequest(pid, async () => {
      await new Promise((r) => setTimeout(r, d.seconds * 1000));
      return d.seconds;
    });
    const pacedRate = Math.max(100, Math.round((grpcRawRps * 0.6) / 100) * 100);
    const httpAgent = new Agent({ keepAlive: true, maxSockets: kConcurrency });
    const post = () => httpPost(`${server.url}/models/tiny/invoke`, httpBody, httpAgent);
    const pacedHttp: number[] = [];
    const pacedGrpc: number[] = [];
    // Alternating, so both see the same machine load.
    for (let i = 0; i < d.reps; i++) {
      pacedHttp.push(await cpuPerRequest(pid, () => paced(pacedRate, d.seconds, post), idleMicrosPerSecond));
      pacedGrpc.push(
        await cpuPerRequest(
          pid,
          () => paced(pacedRate, d.seconds, () => unaryCall(clients.kserve, 'ModelInfer', infer)),
          idleMicrosPerSecond,
        ),
      );
    }
    httpAgent.destroy();

    const tokens = 32;
    const body = JSON.stringify({ prompt: 'hello', max_tokens: tokens });
    const requests = process.env.BENCH_QUICK ? 10 : 50;
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
    return {
      httpJsonRps: http.rps,
      grpcRawRps,
      ratio: grpcRawRps / http.rps,
      httpJsonCpuMicros,
      grpcRawCpuMicros,
      cpuRatio: grpcRawCpuMicros / httpJsonCpuMicros,
      pacedRate,
      idleMicrosPerSecond,
      pacedHttpJsonCpuMicros: median(pacedHttp),
      pacedGrpcRawCpuMicros: median(pacedGrpc),
      pacedCpuRatio: median(pacedGrpc) / median(pacedHttp),
      tokens,
      grpcFirstMessageMs: median(grpcFirst),
      httpFirstChunkMs: median(httpFirst),
    };
  } finally {
    clients.close();
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:grpc',
  'gRPC ModelInfer against HTTP JSON invoke, and gRPC streaming against HTTP chunked.',
);

if (require.main === module) runBench(USAGE, benchGrpc, (r) => console.log(r));
