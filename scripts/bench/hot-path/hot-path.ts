/**
 * The hot path, tiny model (16→32→4 MLP: overhead-dominated), one worker (the tuned settings;
 * others with MME_BENCH_SETTINGS, kit/bench-settings.ts), against the in-process limit measured
 * in the same run: throughput at concurrency 16 (target ≥ 0.7× the baseline) and
 * p50 server overhead at concurrency 1 (our p50 − raw session.run p50; target ≤ 0.5 ms).
 */
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { benchDurations, benchUsage, cpuPerRequest, runBench, startBaseline, startBenchServer } from '../kit/bench-run';
import { hammer, type Hammered } from '../../../harness/load-generator';
import { median } from '../../../harness/statistics';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';
import { rawRunLatency, sequentialLatency, type Percentiles } from '../kit/latency';

export interface HotPathResult {
  ours: Hammered;
  baseline: Hammered;
  throughputRatio: number;
  /** CPU per request at 16 connections, µs from /proc: the server and its workers, and the in-process baseline. */
  oursCpuMicros: number;
  baselineCpuMicros: number;
  latencyOurs: Percentiles;
  latencyBaseline: Percentiles;
  rawRun: Percentiles;
  overheadMs: number;
}

export async function benchHotPath(settings: BenchSettings = settingsFromEnv()): Promise<HotPathResult> {
  const server = await startBenchServer([], { settings });
  const dir = writeTinyMlp(server.store);
  const onnxPath = path.join(dir, 'model.onnx');
  const baseline = await startBaseline(onnxPath);
  try {
    await server.loadModel({ model_name: 'tiny', url: dir });
    const row = Array.from({ length: 16 }, (_, i) => i / 16);
    const body = JSON.stringify({ inputs: { input: [row] } });
    const d = benchDurations();
    const oursUrl = `${server.url}/models/tiny/invoke`;
    // Interleaved so drift on a shared machine hits both sides alike.
    const oursRuns: Hammered[] = [];
    const baseRuns: Hammered[] = [];
    const oursCpu: number[] = [];
    const baseCpu: number[] = [];
    await hammer(oursUrl, body, { connections: 16, seconds: d.warmupSeconds });
    await hammer(baseline.url, body, { connections: 16, seconds: d.warmupSeconds });
    /** One measured run, its server-side CPU per request pushed to `cpu`. */
    const run = async (url: string, pid: number, runs: Hammered[], cpu: number[]) => {
      let r: Hammered | undefined;
      cpu.push(
        await cpuPerRequest(pid, async () => {
          r = await hammer(url, body, { connections: 16, seconds: d.seconds });
          return r.rps * d.seconds;
        }),
      );
      runs.push(r!);
    };
    for (let i = 0; i < d.reps; i++) {
      await run(oursUrl, server.child.pid!, oursRuns, oursCpu);
      await run(baseline.url, baseline.pid, baseRuns, baseCpu);
    }
    const med = (runs: Hammered[]) => runs.sort((a, b) => a.rps - b.rps)[runs.length >> 1];
    const ours = med(oursRuns);
    const base = med(baseRuns);
    const n = process.env.BENCH_QUICK ? 1000 : 5000;
    const latencyOurs = await sequentialLatency(oursUrl, body, n);
    const latencyBaseline = await sequentialLatency(baseline.url, body, n);
    const rawRun = await rawRunLatency(
      onnxPath,
      { input: new ort.Tensor('float32', Float32Array.from(row), [1, 16]) },
      n,
    );
    return {
      ours,
      baseline: base,
      throughputRatio: ours.rps / base.rps,
      oursCpuMicros: median(oursCpu),
      baselineCpuMicros: median(baseCpu),
      latencyOurs,
      latencyBaseline,
      rawRun,
      overheadMs: latencyOurs.p50 - rawRun.p50,
    };
  } finally {
    baseline.stop();
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:hot-path',
  'Tiny-model throughput and p50 server overhead against the in-process limit.',
);

if (require.main === module) runBench(USAGE, () => benchHotPath());
