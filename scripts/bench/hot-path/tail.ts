/**
 * The tail at concurrency 1: tiny MLP, sequential keep-alive requests to a dedicated model, a
 * shared-mode model and the in-process server, interleaved round by round so the load of the
 * shared machine hits all three alike. Reports p50 / p99 / p99.9 of each over every round, the
 * ratios against the in-process server, and the server's scavenges during our rounds (count and
 * mean pause, from prom-client's GC histogram on /metrics): the p99.9 stall was slow scavenges
 * (docs/performance.md).
 */
import path from 'node:path';
import { benchDurations, benchUsage, runBench, startBaseline, startBenchServer } from '../kit/bench-run';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';
import { cdf, percentiles, sequentialSamples, type CdfPoint, type Percentiles } from '../kit/latency';

export interface TailResult {
  requests: number;
  rounds: number;
  dedicated: Percentiles;
  shared: Percentiles;
  inProcess: Percentiles;
  /** Ours over the in-process server's, dedicated mode. */
  p99Ratio: number;
  p999Ratio: number;
  p50OverheadMs: number;
  sharedP999Ratio: number;
  /** The server's minor GCs while our rounds ran. */
  scavenges: number;
  scavengeMeanMs: number;
  /** The latency distribution of each, for the c=1 CDF chart. */
  cdf: { dedicated: CdfPoint[]; shared: CdfPoint[]; inProcess: CdfPoint[] };
}

/** Minor-GC count and total seconds of the server process, from its /metrics (none yet: zeros). */
async function scavengeTotals(url: string): Promise<{ count: number; seconds: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (suffix: string) =>
    Number(new RegExp(`^nodejs_gc_duration_seconds_${suffix}\\{kind="minor"\\}\\s+(\\S+)`, 'm').exec(text)?.[1] ?? 0);
  return { count: read('count'), seconds: read('sum') };
}

export async function benchTail(settings: BenchSettings = settingsFromEnv()): Promise<TailResult> {
  const server = await startBenchServer([], { settings });
  const dir = writeTinyMlp(server.store);
  const baseline = await startBaseline(path.join(dir, 'model.onnx'));
  try {
    for (const [name, workerMode] of [
      ['tiny', 'dedicated'],
      ['tiny-shared', 'shared'],
    ])
      await server.loadModel({ model_name: name, url: dir, worker_mode: workerMode });
    const body = JSON.stringify({ inputs: { input: [Array.from({ length: 16 }, (_, i) => i / 16)] } });
    const targets = {
      dedicated: `${server.url}/models/tiny/invoke`,
      shared: `${server.url}/models/tiny-shared/invoke`,
      inProcess: baseline.url,
    };
    const requests = process.env.BENCH_QUICK ? 1000 : 10_000;
    // Rounds interleave the three; `npm run bench` makes one a call and repeats the call.
    const rounds = benchDurations().reps;
    const samples = { dedicated: [] as number[], shared: [] as number[], inProcess: [] as number[] };
    let scavenges = 0;
    let scavengeSeconds = 0;
    for (let r = 0; r < rounds; r++) {
      for (const key of ['dedicated', 'shared', 'inProcess'] as const) {
        const ours = key !== 'inProcess';
        const before = ours ? await scavengeTotals(server.url) : null;
        samples[key].push(...(await sequentialSamples(targets[key], body, requests, r === 0 ? 500 : 50)));
        if (before) {
          const after = await scavengeTotals(server.url);
          scavenges += after.count - before.count;
          scavengeSeconds += after.seconds - before.seconds;
        }
      }
    }
    const [dedicated, shared, inProcess] = [samples.dedicated, samples.shared, samples.inProcess].map(percentiles);
    return {
      requests,
      rounds,
      dedicated,
      shared,
      inProcess,
      p99Ratio: dedicated.p99 / inProcess.p99,
      p999Ratio: dedicated.p999 / inProcess.p999,
      p50OverheadMs: dedicated.p50 - inProcess.p50,
      sharedP999Ratio: shared.p999 / inProcess.p999,
      scavenges,
      scavengeMeanMs: scavenges > 0 ? (scavengeSeconds / scavenges) * 1000 : 0,
      cdf: { dedicated: cdf(samples.dedicated), shared: cdf(samples.shared), inProcess: cdf(samples.inProcess) },
    };
  } finally {
    baseline.stop();
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:tail',
  'p50 / p99 / p99.9 at concurrency 1, dedicated and shared, against the in-process server, interleaved.',
);

if (require.main === module) runBench(USAGE, () => benchTail());
