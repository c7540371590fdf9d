/**
 * What part 23's controls cost on the hot path (issue 32's closing figures): the tiny MLP (16→32→4,
 * one worker, 16 connections) on a server with one control on, against a plain server (no keys)
 * started beside it, the two interleaved run by run so a shared machine's drift hits both:
 * throughput and server CPU (the server and its workers, /proc) per request, as ratios over plain.
 *
 * - tracing off: otel_traces_sampler_ratio=0 (the default) with an exporter endpoint set; the SDK
 *   is never loaded, so this is plain against plain: the noise floor, which must be ≈ 1;
 * - tracing at ratio 1: every request a span with its children, exported to an OTLP/HTTP sink in
 *   this process that takes and drops the batches;
 * - inference_token: every request carries Authorization: Bearer (compared in constant time);
 * - TLS: tls_cert_file and tls_key_file (EC P-256 from openssl), the load generator over HTTPS with
 *   keep-alive (the handshake once per connection, as a client pool does);
 * - a deadline: X-Request-Timeout: 30000 on every request (parsed, bounded, carried to the queue).
 *
 * Exported as benchControls({ quick }) for the orchestrator; `npm run bench:controls` prints JSON.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { hammer, type Hammered } from '../../../harness/load-generator';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { median } from '../../../harness/statistics';
import { tempDir } from '../../../harness/test-server';
import { issue, makeCa } from '../../../harness/tls-certificates';
import {
  benchDurations,
  benchUsage,
  cpuPerRequest,
  runBench,
  startBenchServer,
  type BenchServer,
} from '../kit/bench-run';

export interface ControlFigures {
  control: string;
  /** The server's extra config lines and the requests' extra headers. */
  properties: string[];
  headers: Record<string, string>;
  /** Medians over the interleaved runs. */
  rps: number;
  plainRps: number;
  cpuMicros: number;
  plainCpuMicros: number;
  /** Control over plain: throughput (1 = free; below 1 = slower) and CPU per request (above 1 = dearer). */
  throughputRatio: number;
  cpuRatio: number;
  /** Every response of the runs that was not 2xx, and connection errors: must be 0. */
  non2xx: number;
  errors: number;
}

export interface ControlsResult {
  machine: string;
  durations: { seconds: number; reps: number; warmupSeconds: number };
  controls: ControlFigures[];
}

interface Control {
  control: string;
  properties: string[];
  headers: Record<string, string>;
}

const kToken = 'bench-token-5f2c91';

/** An OTLP/HTTP collector that answers every export with 200 and keeps nothing. */
async function otlpSink(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function controls(sinkUrl: string, tlsDir: string): Control[] {
  const ca = makeCa(tlsDir, 'ca');
  const cert = issue(tlsDir, ca, 'server');
  return [
    {
      control: 'tracing off (ratio 0, endpoint set)',
      properties: ['otel_traces_sampler_ratio=0', `otel_exporter_otlp_endpoint=${sinkUrl}`],
      headers: {},
    },
    {
      control: 'tracing at ratio 1',
      properties: ['otel_traces_sampler_ratio=1', `otel_exporter_otlp_endpoint=${sinkUrl}`],
      headers: {},
    },
    {
      control: 'inference_token',
      properties: [`inference_token=${kToken}`],
      headers: { authorization: `Bearer ${kToken}` },
    },
    {
      control: 'TLS (https, keep-alive)',
      properties: [
        'inference_address=https://127.0.0.1:0',
        'management_address=https://127.0.0.1:0',
        `tls_cert_file=${cert.cert}`,
        `tls_key_file=${cert.key}`,
      ],
      headers: {},
    },
    {
      control: 'deadline header (X-Request-Timeout: 30000)',
      properties: [],
      headers: { 'x-request-timeout': '30000' },
    },
  ];
}

/**
 * POST of a JSON body over http or https; https trusts the bench's own certificate without its CA
 * (a loopback listener this run just started), as the load generator does.
 */
function load(url: string, json: unknown): Promise<{ status: number; text: string }> {
  const body = JSON.stringify(json);
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? https : http).request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' }, rejectUnauthorized: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function tinyServer(properties: string[]): Promise<{ server: BenchServer; url: string }> {
  const server = await startBenchServer(properties);
  const dir = writeTinyMlp(server.store);
  const res = await load(`${server.managementUrl}/models`, { model_name: 'tiny', url: dir, initial_workers: 1 });
  if (res.status !== 200) {
    await server.stop();
    throw new Error(`tiny did not load: ${res.status} ${res.text}`);
  }
  return { server, url: `${server.url}/models/tiny/invoke` };
}

export async function benchControls(opts: { quick?: boolean } = {}): Promise<ControlsResult> {
  const d = opts.quick ? { seconds: 1, reps: 1, warmupSeconds: 0.5 } : benchDurations();
  const row = Array.from({ length: 16 }, (_, i) => i / 16);
  const body = JSON.stringify({ inputs: { input: [row] } });
  const sink = await otlpSink();
  const tlsDir = tempDir('mme-bench-tls-');
  const figures: ControlFigures[] = [];
  try {
    for (const c of controls(sink.url, tlsDir)) {
      // A plain server of its own for each control, started with it: both sides equally fresh
      // (a server started minutes before had long finished starting its spare workers).
      const [plain, other] = [await tinyServer([]), await tinyServer(c.properties)];
      try {
        const sides = [
          { url: plain.url, pid: plain.server.child.pid!, headers: {}, runs: [] as Hammered[], cpu: [] as number[] },
          {
            url: other.url,
            pid: other.server.child.pid!,
            headers: c.headers,
            runs: [] as Hammered[],
            cpu: [] as number[],
          },
        ];
        for (const s of sides)
          await hammer(s.url, body, { connections: 16, seconds: d.warmupSeconds, headers: s.headers });
        for (let i = 0; i < d.reps; i++) {
          // Which side goes first alternates, so neither always follows the other's warm caches.
          for (const s of i % 2 ? [...sides].reverse() : sides) {
            let r: Hammered | undefined;
            s.cpu.push(
              await cpuPerRequest(s.pid, async () => {
                r = await hammer(s.url, body, { connections: 16, seconds: d.seconds, headers: s.headers });
                return r.rps * d.seconds;
              }),
            );
            s.runs.push(r!);
          }
        }
        const [p, o] = sides;
        const rps = (s: (typeof sides)[number]) => median(s.runs.map((r) => r.rps));
        figures.push({
          control: c.control,
          properties: c.properties,
          headers: c.headers,
          rps: rps(o),
          plainRps: rps(p),
          cpuMicros: median(o.cpu),
          plainCpuMicros: median(p.cpu),
          throughputRatio: rps(o) / rps(p),
          cpuRatio: median(o.cpu) / median(p.cpu),
          non2xx: [...p.runs, ...o.runs].reduce((n, r) => n + r.non2xx, 0),
          errors: [...p.runs, ...o.runs].reduce((n, r) => n + r.errors, 0),
        });
      } finally {
        await other.server.stop();
        await plain.server.stop();
      }
    }
  } finally {
    await sink.close();
    fs.rmSync(tlsDir, { recursive: true, force: true });
  }
  const machine = `${os.cpus()[0]?.model ?? 'cpu'} × ${os.availableParallelism()}, Node ${process.version}, load average ${os.loadavg()[0].toFixed(1)} at the end`;
  return { machine, durations: d, controls: figures };
}

const USAGE = benchUsage(
  'npm run bench:controls',
  "Part 23's controls (tracing off and at ratio 1, inference_token, TLS, a deadline header) on the tiny-MLP hot path, each against a plain server interleaved in the same run: throughput and CPU-per-request ratios.",
);

if (require.main === module) runBench(USAGE, () => benchControls({ quick: Boolean(process.env.BENCH_QUICK) }));
