/**
 * Shared bench plumbing: a real server process started from the CLI, and autocannon runs with
 * warm-up and repetitions. Every figure is a median over repetitions, compared with a baseline
 * measured in the same run: this 2-core machine is shared and noisy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { mlpModel, writeModelDir } from '../../test/fixtures/onnx-models';
import { cpuMicros, descendantsOf } from '../../test/helpers/processes';
import { printedHelp, UsageError } from '../cli-flags';

// MME_BENCH_MAIN=FILE: another build's dist/src/main.js, for a before/after on the same machine.
const kMain = process.env.MME_BENCH_MAIN ?? path.join(__dirname, '..', '..', 'src', 'main.js');

export interface BenchServer {
  url: string;
  child: ChildProcess;
  store: string;
  stop(): Promise<void>;
}

/** Starts `node dist/src/main.js` on an ephemeral port with one listener for both APIs. */
export async function startServer(properties: string[] = []): Promise<BenchServer> {
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-bench-'));
  const configFile = path.join(store, 'bench.properties');
  fs.writeFileSync(configFile, [
    'inference_address=http://127.0.0.1:0',
    'management_address=http://127.0.0.1:0',
    `model_store=${store}`,
    'default_workers_per_model=1',
    ...properties,
  ].join('\n'));
  // MME_BENCH_PROFILE=DIR: CPU profiles of the server and its workers land in DIR (README, Performance).
  const profile = process.env.MME_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.MME_BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, kMain, '--mms-config', configFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = /API listening on (http:\/\/\S+)/.exec(l);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return {
    url,
    child,
    store,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      fs.rmSync(store, { recursive: true, force: true });
    },
  };
}

export async function postJson(url: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** One autocannon run of `seconds` at `connections` concurrency, POSTing `body`. */
export async function load(url: string, body: string | Buffer, connections: number, seconds: number, contentType = 'application/json'): Promise<LoadResult> {
  const r = await autocannon({ url, method: 'POST', body, headers: { 'content-type': contentType }, connections, duration: seconds, pipelining: 1 });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

/**
 * CPU of `root` and its descendants (a server and its workers) per request, µs, from /proc, over
 * one run of `run`, which returns the requests it made; less sensitive to a busy machine than
 * req/s. `idleMicrosPerSecond` (the server's own timers) is taken off when given.
 */
export async function cpuPerRequest(root: number, run: () => Promise<number>, idleMicrosPerSecond = 0): Promise<number> {
  const tree = () => [root, ...descendantsOf(root)].reduce((sum, pid) => sum + cpuMicros(pid), 0);
  const before = tree();
  const t0 = performance.now();
  const requests = await run();
  return (tree() - before - (idleMicrosPerSecond * (performance.now() - t0)) / 1000) / requests;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Warm-up once, then `reps` measured runs; returns the medians. */
export async function measure(url: string, body: string | Buffer, connections: number, opts: { seconds: number; reps: number; warmupSeconds: number }, contentType?: string): Promise<LoadResult> {
  await load(url, body, connections, opts.warmupSeconds, contentType);
  const runs: LoadResult[] = [];
  for (let i = 0; i < opts.reps; i++) runs.push(await load(url, body, connections, opts.seconds, contentType));
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    errors: runs.reduce((s, r) => s + r.errors, 0),
    non2xx: runs.reduce((s, r) => s + r.non2xx, 0),
  };
}

/**
 * The in-process limit (baseline-server.ts) in its own process, serving `onnxPath` with the same
 * codecs as the workers.
 */
/** The tiny MLP (16→32→4) of the latency and hot-path figures, as model directory `tiny` in `store`; returns its path. */
export function writeTinyMlp(store: string): string {
  return writeModelDir(store, 'tiny', mlpModel({ sizes: [16, 32, 4], seed: 9 }));
}

export async function startBaseline(onnxPath: string): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(process.execPath, [path.join(__dirname, 'baseline-server.js'), onnxPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      const m = /listening on (\S+)/.exec(l);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`baseline exited with ${code}`)));
  });
  return { url, pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

/** A bench run as its own script: `print` its result, or print the error and exit 1. */
export function runScript<T>(usage: string, work: () => Promise<T>, print: (result: T) => void = (r) => console.log(JSON.stringify(r, null, 2))): void {
  if (printedHelp(usage)) return;
  work().then(print, (err) => {
    // A UsageError is the user's to fix (a flag, a missing tool): its message says how; a stack would bury it.
    console.error(err instanceof UsageError ? err.message : err);
    process.exit(1);
  });
}

/** The usage of a bench script: its command, what it measures, and the environment every bench reads. */
export function benchUsage(command: string, what: string): string {
  return `Usage: ${command}
  ${what}
  BENCH_QUICK=1        short runs that only check the harness works
  MME_BENCH_PROFILE=DIR  CPU profiles of the server and its workers land in DIR (see scripts/profile-top.ts)
  MME_BENCH_MAIN=FILE    the server to start instead of this build's dist/src/main.js (a before/after)`;
}

/** Short runs (BENCH_QUICK=1) for smoke-testing the harness itself. */
export function benchDurations(): { seconds: number; reps: number; warmupSeconds: number } {
  return process.env.BENCH_QUICK ? { seconds: 2, reps: 1, warmupSeconds: 1 } : { seconds: 8, reps: 3, warmupSeconds: 3 };
}
