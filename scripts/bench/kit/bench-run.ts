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
import { hammer, type Hammered } from '../../../harness/load-generator';
import { cpuMicros, descendantsOf } from '../../../harness/process-probes';
import { median } from '../../../harness/statistics';
import { tempDir } from '../../../harness/test-server';
import { keySpec } from '../../../src/config/keys';
import { printedHelp, UsageError } from '../../cli-flags';

export interface BenchServer extends CliServer {
  /** The model store, removed once the server stops. */
  store: string;
}

/**
 * Starts `node dist/src/main.js` on an ephemeral port with one listener for both APIs, and the
 * spare workers a deployment has by default (the test base has none).
 */
export async function startBenchServer(
  properties: string[] = [],
  { launcher }: { launcher?: string[] } = {},
): Promise<BenchServer> {
  const store = tempDir('mme-bench-');
  const server = await startCliServer(
    // MME_BENCH_PROPERTIES: config.properties lines of its own, e.g. a feature's cost on the same bench.
    [`spare_workers=${keySpec('spare_workers')!.default}`, ...properties, process.env.MME_BENCH_PROPERTIES ?? ''].join(
      '\n',
    ),
    {
      store,
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
  opts: { seconds: number; reps: number; warmupSeconds: number },
  contentType?: string,
  headers?: Record<string, string>,
): Promise<Measured> {
  await hammer(url, body, { connections, seconds: opts.warmupSeconds, contentType, headers });
  const runs: Hammered[] = [];
  for (let i = 0; i < opts.reps; i++)
    runs.push(await hammer(url, body, { connections, seconds: opts.seconds, contentType, headers }));
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
export async function startBaseline(onnxPath: string): Promise<{ url: string; pid: number; stop: () => void }> {
  const child = spawn(process.execPath, [path.join(__dirname, 'baseline-server.js'), onnxPath], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
  MME_BENCH_PROPERTIES=TEXT  config.properties lines added to the server's, e.g. otel_traces_sampler_ratio=1`;
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
