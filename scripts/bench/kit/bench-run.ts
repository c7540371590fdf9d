/**
 * A bench run's plumbing: its server started from the CLI with the bench knobs, warm-up and
 * repetitions over the load generator, the in-process baseline, and the script's entry point.
 * Every figure is a median over repetitions, compared with a baseline measured in the same run:
 * this 2-core machine is shared and noisy.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { type CliServer, startCliServer } from '../../../harness/cli-server';
import { postJson } from '../../../harness/http-requests';
import { hammer, type Hammered } from '../../../harness/load-generator';
import { cpuMicros, descendantsOf } from '../../../harness/process-probes';
import { median } from '../../../harness/statistics';
import { tempDir } from '../../../harness/test-server';
import { keySpec } from '../../../src/config/keys';
import { printedHelp, UsageError } from '../../cli-flags';
import { type BenchSettings, settingsSpec } from './bench-settings';
import type { BatchWindow } from './in-process-batcher';

export interface BenchServer extends CliServer {
  /** The model store, removed once the server stops. */
  store: string;
  /** POST /models with `fields` and what the server's settings add to every load; anything but 200 throws. */
  loadModel(fields: { model_name: string; url: string } & Record<string, unknown>): Promise<void>;
}

/**
 * Starts `node dist/src/main.js` on an ephemeral port with one listener for both APIs, and the
 * spare workers a deployment has by default (the test base has none). `properties` are the bench's
 * own (what its rows measure); `settings` are how the server is tuned (bench-settings.ts).
 */
export async function startBenchServer(
  properties: string[] = [],
  { launcher, settings = 'tuned' }: { launcher?: string[]; settings?: BenchSettings } = {},
): Promise<BenchServer> {
  const store = tempDir('mme-bench-');
  const spec = settingsSpec(settings);
  const server = await startCliServer(
    // MME_BENCH_PROPERTIES: config.properties lines of its own, e.g. a feature's cost on the same bench.
    [
      `spare_workers=${keySpec('spare_workers')!.default}`,
      ...spec.properties,
      ...properties,
      process.env.MME_BENCH_PROPERTIES ?? '',
    ].join('\n'),
    {
      store,
      env: spec.env,
      // MME_BENCH_MAIN=FILE: another build's dist/src/main.js, for a before/after on the same machine.
      main: process.env.MME_BENCH_MAIN,
      launcher,
      // MME_BENCH_PROFILE=DIR: CPU profiles of the server and its workers land in DIR (README, Performance).
      // MME_BENCH_NODE_ARGS: node options for the server alone (e.g. --trace-gc; its output joins the server's lines).
      nodeArgs: [
        ...(process.env.MME_BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.MME_BENCH_PROFILE}`] : []),
        ...(process.env.MME_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      ],
    },
  );
  // What goes wrong in the server shows as the bench runs.
  server.child.stderr!.pipe(process.stderr, { end: false });
  return {
    ...server,
    store,
    loadModel: async (fields) => {
      const res = await postJson(`${server.url}/models`, { ...fields, ...spec.load });
      if (res.status !== 200) throw new Error(`load ${fields.model_name}: ${res.status} ${res.text.slice(0, 300)}`);
    },
    stop: async () => {
      const code = await server.stop();
      fs.rmSync(store, { recursive: true, force: true });
      return code;
    },
  };
}

/**
 * CPU of `root` and its descendants (a server and its workers) per request, µs, from /proc, over
 * one run of `run`, which returns the requests it made; less sensitive to a busy machine than
 * req/s. `idleMicrosPerSecond` (the server's own timers) is taken off when given.
 */
export async function cpuPerRequest(
  root: number,
  run: () => Promise<number>,
  idleMicrosPerSecond = 0,
): Promise<number> {
  const tree = () => [root, ...descendantsOf(root)].reduce((sum, pid) => sum + cpuMicros(pid), 0);
  const before = tree();
  const t0 = performance.now();
  const requests = await run();
  return (tree() - before - (idleMicrosPerSecond * (performance.now() - t0)) / 1000) / requests;
}

/** The figures `measure` reports: medians over its repetitions, errors summed. */
export type Measured = Pick<Hammered, 'rps' | 'p50' | 'p99' | 'errors' | 'non2xx'>;

/** Warm-up once, then `reps` measured runs; returns the medians. */
export async function measure(
  url: string,
  body: string | Buffer,
  connections: number,
  opts: BenchDurations,
  contentType?: string,
  headers?: Record<string, string>,
): Promise<Measured> {
  return (await measureInterleaved([url], body, connections, opts, { contentType, headers }))[0];
}

/**
 * Each of `urls` warmed up once, then `reps` rounds of one measured run each, in turn, so a drift of
 * the shared machine's load hits every side alike; the medians of each, in the order of `urls`.
 */
export async function measureInterleaved(
  urls: readonly string[],
  body: string | Buffer,
  connections: number,
  opts: BenchDurations,
  request: { contentType?: string; headers?: Record<string, string> } = {},
): Promise<Measured[]> {
  for (const url of urls) await hammer(url, body, { connections, seconds: opts.warmupSeconds, ...request });
  const runs: Hammered[][] = urls.map(() => []);
  for (let i = 0; i < opts.reps; i++)
    for (const [k, url] of urls.entries())
      runs[k].push(await hammer(url, body, { connections, seconds: opts.seconds, ...request }));
  return runs.map((r) => ({
    rps: median(r.map((x) => x.rps)),
    p50: median(r.map((x) => x.p50)),
    p99: median(r.map((x) => x.p99)),
    errors: r.reduce((s, x) => s + x.errors, 0),
    non2xx: r.reduce((s, x) => s + x.non2xx, 0),
  }));
}

/**
 * The in-process limit (baseline-server.ts) in its own process, serving `onnxPath` with the same
 * codecs as the workers; with `batching`, requests are batched as the server batches them.
 */
export async function startBaseline(
  onnxPath: string,
  batching?: BatchWindow,
): Promise<{ url: string; pid: number; stop: () => void }> {
  const args = [path.join(__dirname, 'baseline-server.js'), onnxPath];
  if (batching) args.push(String(batching.batchSize), String(batching.maxBatchDelayMs));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on('line', (l) => {
      const m = /listening on (\S+)/.exec(l);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`baseline exited with ${code}`)));
  });
  return { url, pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

/** A bench run as its own script: `print` its result, or print the error and exit 1. */
export function runBench<T>(
  usage: string,
  work: () => Promise<T>,
  print: (result: T) => void = (r) => console.log(JSON.stringify(r, null, 2)),
): void {
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
  MME_BENCH_MAIN=FILE    the server to start instead of this build's dist/src/main.js (a before/after)
  MME_BENCH_NODE_ARGS=TEXT  node options for the server process alone, e.g. --max-semi-space-size=16
  MME_BENCH_PROPERTIES=TEXT  config.properties lines added to the server's, e.g. otel_traces_sampler_ratio=1
  MME_BENCH_SETTINGS=NAME  the throughput and latency benches' server settings: tuned (one worker, the default),
                         defaults (none set), sagemaker (the image's config.properties, SAGEMAKER_MULTI_MODEL=true)`;
}

/** How long a measured run lasts, how many a figure takes the median of, and the warm-up before them. */
export interface BenchDurations {
  seconds: number;
  reps: number;
  warmupSeconds: number;
}

/** BENCH_QUICK=1: short runs that only check the harness works. */
const kQuick: BenchDurations = { seconds: 2, reps: 1, warmupSeconds: 1 };
/** A bench run on its own (`npm run bench:hot-path`): the median of three runs. */
const kAlone: BenchDurations = { seconds: 8, reps: 3, warmupSeconds: 3 };
/**
 * Inside `npm run bench`, which repeats each ratio's whole bench three times and reports the spread:
 * one shorter run per repeat (a 4 s run at the slowest load, the JSON image's ~60 req/s, still
 * counts a few hundred requests).
 */
const kInFullRun: BenchDurations = { seconds: 4, reps: 1, warmupSeconds: 2 };

let inFullRun = false;

/** `npm run bench` calls this once: the benches it calls then make one run per call, which it repeats. */
export function useFullRunDurations(): void {
  inFullRun = true;
}

export function benchDurations(): BenchDurations {
  if (process.env.BENCH_QUICK) return kQuick;
  return inFullRun ? kInFullRun : kAlone;
}
