/**
 * gRPC against HTTP driven by one C client for both (h2load, Debian's nghttp2-client), so neither
 * protocol's figure carries a Node client's cost: KServe ModelInfer with raw contents over h2c (one
 * connection, 16 streams) against HTTP/1.1 JSON invoke (16 connections), the tiny MLP, a server
 * with the shipped defaults. The two alternate run by run; each pair gives a throughput ratio and
 * a CPU-per-request ratio (server + workers, /proc).
 */
import { execFileSync, execFile } from 'node:child_process';
import http2 from 'node:http2';
import fs from 'node:fs';
import path from 'node:path';
import { cpuMicros, descendantsOf, waitFor } from '../../../harness/process-probes';
import { f32 } from '../../../harness/float32';
import { postJson } from '../../../harness/http-requests';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { median } from '../../../harness/statistics';
import { keySpec } from '../../../src/config/keys';
import { serviceDefinitions } from '../../../src/grpc/protos';
import { Flags, UsageError } from '../../cli-flags';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';

const kInFlight = 16;

interface Run {
  rps: number;
  /** Server + workers CPU per request, µs. */
  cpuMicros: number;
  /** The server process alone, µs per request. */
  serverCpuMicros: number;
  succeeded: number;
  failed: number;
}

interface Side {
  url: string;
  args: string[];
}

/** One h2load run of `seconds` (after `warmup` s) with the server tree's CPU over it. */
function h2load(side: Side, seconds: number, warmup: number, pid: number): Promise<Run> {
  const tree = () => [pid, ...descendantsOf(pid)].reduce((sum, p) => sum + cpuMicros(p), 0);
  const args = [...side.args, `--duration=${seconds}`, `--warm-up-time=${warmup}`, side.url];
  return new Promise((resolve, reject) => {
    let before = [0, 0];
    // The warm-up's CPU is left out: the count starts once it is over.
    const start = setTimeout(() => (before = [tree(), cpuMicros(pid)]), warmup * 1000);
    execFile('h2load', args, { maxBuffer: 1 << 20 }, (err, out) => {
      clearTimeout(start);
      const [cpu, serverCpu] = [tree() - before[0], cpuMicros(pid) - before[1]];
      if (err) return reject(new Error(`h2load ${args.join(' ')}: ${err.message}\n${out}`));
      const rps = /finished in [\d.]+s, ([\d.]+) req\/s/.exec(out);
      const counts = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed/.exec(out);
      if (!rps || !counts) return reject(new Error(`h2load printed no figures:\n${out}`));
      const done = Number(counts[1]);
      resolve({
        rps: Number(rps[1]),
        cpuMicros: cpu / done,
        serverCpuMicros: serverCpu / done,
        succeeded: Number(counts[2]),
        failed: Number(counts[3]),
      });
    });
  });
}

/** gRPC's status comes in trailers, which h2load does not read: one call of the same bytes, checked here. */
async function checkGrpcCall(url: string, body: Buffer): Promise<void> {
  const u = new URL(url);
  const session = http2.connect(u.origin);
  try {
    const status = await new Promise<string>((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': u.pathname,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      req.on('trailers', (t) => resolve(`${t['grpc-status']} ${t['grpc-message'] ?? ''}`));
      req.on('error', reject);
      req.resume();
      req.end(body);
    });
    if (!status.startsWith('0 ')) throw new Error(`ModelInfer answered grpc-status ${status}`);
  } finally {
    session.close();
  }
}

export interface H2loadResult {
  command: string;
  server: string;
  pairs: Array<{ http: Run; grpc: Run; rpsRatio: number; cpuRatio: number }>;
  rpsRatio: number;
  cpuRatio: number;
}

/** Why this bench cannot run here, or null when h2load is installed. */
export function h2loadMissing(): string | null {
  try {
    execFileSync('h2load', ['--version']);
    return null;
  } catch {
    return 'h2load is not installed: apt-get install nghttp2-client';
  }
}

/** `only`: one protocol's runs alone (a profile of its path: MME_BENCH_PROFILE). */
export async function benchGrpcH2load(opts: {
  seconds: number;
  warmup: number;
  pairs: number;
  only?: 'grpc' | 'http';
}): Promise<H2loadResult> {
  const missing = h2loadMissing();
  if (missing) throw new UsageError(missing);
  const server = await startBenchServer([
    'grpc_inference_port=0',
    `default_workers_per_model=${keySpec('default_workers_per_model')!.default}`,
  ]);
  try {
    // The gRPC listener is logged after the HTTP one that startBenchServer waits for.
    const grpcLine = () => server.lines.find((l) => /gRPC inference API .* listening on /.test(l));
    await waitFor(() => grpcLine() !== undefined, 'the gRPC listener');
    const grpcAddress = /listening on (\S+)/.exec(grpcLine()!)![1];
    const res = await postJson(`${server.url}/models`, { model_name: 'tiny', url: writeTinyMlp(server.store) });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    const row = Array.from({ length: 16 }, (_, i) => i / 16);
    const dir = fs.mkdtempSync(path.join(server.store, 'bodies-'));
    const jsonFile = path.join(dir, 'invoke.json');
    fs.writeFileSync(jsonFile, JSON.stringify({ inputs: { input: [row] } }));
    const message = serviceDefinitions().kserve.service.ModelInfer.requestSerialize({
      model_name: 'tiny',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16] }],
      raw_input_contents: [f32(row)],
    });
    // gRPC's framing: a compressed flag (0) and the message's length, big-endian.
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), message]);
    frame.writeUInt32BE(message.length, 1);
    const grpcFile = path.join(dir, 'infer.grpc');
    fs.writeFileSync(grpcFile, frame);
    const grpcUrl = `http://${grpcAddress}/inference.GRPCInferenceService/ModelInfer`;
    await checkGrpcCall(grpcUrl, frame);
    const httpSide: Side = {
      url: `${server.url}/models/tiny/invoke`,
      args: ['--h1', '-c', String(kInFlight), '-m', '1', '-d', jsonFile, '-H', 'content-type: application/json'],
    };
    const grpcSide: Side = {
      url: grpcUrl,
      args: [
        '-c',
        '1',
        '-m',
        String(kInFlight),
        '-d',
        grpcFile,
        '-H',
        'content-type: application/grpc',
        '-H',
        'te: trailers',
      ],
    };
    const pid = server.child.pid!;
    const pairs: H2loadResult['pairs'] = [];
    for (let i = 0; i < opts.pairs; i++) {
      const none = { rps: Number.NaN, cpuMicros: Number.NaN, serverCpuMicros: Number.NaN, succeeded: 0, failed: 0 };
      const httpRun = opts.only === 'grpc' ? none : await h2load(httpSide, opts.seconds, opts.warmup, pid);
      const grpcRun = opts.only === 'http' ? none : await h2load(grpcSide, opts.seconds, opts.warmup, pid);
      if (httpRun.failed + grpcRun.failed > 0)
        throw new Error(`requests failed: ${JSON.stringify({ httpRun, grpcRun })}`);
      pairs.push({
        http: httpRun,
        grpc: grpcRun,
        rpsRatio: grpcRun.rps / httpRun.rps,
        cpuRatio: grpcRun.cpuMicros / httpRun.cpuMicros,
      });
    }
    await checkGrpcCall(grpcUrl, frame);
    return {
      command: `h2load ${grpcSide.args.join(' ')} … ${grpcSide.url}; h2load ${httpSide.args.join(' ')} … ${httpSide.url}`,
      server: process.env.MME_BENCH_MAIN ?? 'this build',
      pairs,
      rpsRatio: median(pairs.map((p) => p.rpsRatio)),
      cpuRatio: median(pairs.map((p) => p.cpuRatio)),
    };
  } finally {
    await server.stop();
  }
}

const USAGE = `${benchUsage(
  'node dist/scripts/bench/data-plane/grpc-h2load.js [--pairs N] [--seconds N] [--warmup N] [--only grpc|http]',
  'gRPC raw ModelInfer against HTTP JSON invoke, both driven by h2load (16 in flight), interleaved pairs.',
)}
  --only               one protocol's runs alone, for a profile of its path`;

if (require.main === module)
  runBench(USAGE, () => {
    const flags = Flags.parse(process.argv.slice(2), {
      pairs: 'string',
      seconds: 'string',
      warmup: 'string',
      only: 'string',
    });
    const only = flags.string('only');
    if (only !== undefined && only !== 'grpc' && only !== 'http')
      throw new UsageError(`--only must be grpc or http, got ${JSON.stringify(only)}`);
    const quick = Boolean(process.env.BENCH_QUICK);
    return benchGrpcH2load({
      pairs: flags.int('pairs', quick ? 1 : 3, 1),
      seconds: flags.number('seconds', quick ? 2 : 8, 1),
      warmup: flags.number('warmup', quick ? 1 : 2, 0),
      only,
    });
  });
