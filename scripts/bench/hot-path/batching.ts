/**
 * Dynamic batching: a 512→4096→512 MLP at concurrency 32, batch_size 16 against batch_size 1 (one
 * worker each under the tuned settings, same server), and batch 16 against the in-process limit
 * batching the same requests the same way (node:http + onnxruntime, the same batch size and
 * delay): whether batching pays, and whether it is at its limit. All three interleaved run by run.
 * Targets: ≥ 2.5× over batch 1; ≥ 0.9× of the in-process batcher.
 */
import path from 'node:path';
import { mlpModel, writeModelDir } from '../../../harness/onnx-models';
import {
  benchDurations,
  benchUsage,
  measureInterleaved,
  runBench,
  startBaseline,
  startBenchServer,
} from '../kit/bench-run';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';
import type { BatchWindow } from '../kit/in-process-batcher';

const kWindow: BatchWindow = { batchSize: 16, maxBatchDelayMs: 5 };

export interface BatchingResult {
  rps1: number;
  rps16: number;
  /** batch 16 over batch 1. */
  ratio: number;
  p99_1: number;
  p99_16: number;
  /** The in-process server batching as the server does; absent from runs before part 28. */
  inProcessRps?: number;
  inProcessP99?: number;
  /** batch 16 over the in-process batcher. */
  inProcessRatio?: number;
}

export async function benchBatching(settings: BenchSettings = settingsFromEnv()): Promise<BatchingResult> {
  const server = await startBenchServer([], { settings });
  const bytes = mlpModel({ sizes: [512, 4096, 512], seed: 5 });
  const dirs = { b1: writeModelDir(server.store, 'b1', bytes), b16: writeModelDir(server.store, 'b16', bytes) };
  const baseline = await startBaseline(path.join(dirs.b16, 'model.onnx'), kWindow);
  try {
    for (const [name, batchSize] of [
      ['b1', 1],
      ['b16', kWindow.batchSize],
    ] as const)
      await server.loadModel({
        model_name: name,
        url: dirs[name],
        batch_size: batchSize,
        max_batch_delay: kWindow.maxBatchDelayMs,
      });
    const body = JSON.stringify({ inputs: { input: [Array.from({ length: 512 }, (_, i) => Math.sin(i))] } });
    const [one, sixteen, inProcess] = await measureInterleaved(
      [`${server.url}/models/b1/invoke`, `${server.url}/models/b16/invoke`, baseline.url],
      body,
      32,
      benchDurations(),
    );
    if ([one, sixteen, inProcess].some((m) => m.non2xx + m.errors > 0))
      throw new Error('non-2xx responses or errors during the batching bench');
    return {
      rps1: one.rps,
      rps16: sixteen.rps,
      ratio: sixteen.rps / one.rps,
      p99_1: one.p99,
      p99_16: sixteen.p99,
      inProcessRps: inProcess.rps,
      inProcessP99: inProcess.p99,
      inProcessRatio: sixteen.rps / inProcess.rps,
    };
  } finally {
    baseline.stop();
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:batching',
  'batch_size 16 against batch_size 1 and against the in-process server batching the same way, on a 512→4096→512 MLP at concurrency 32.',
);

if (require.main === module) {
  runBench(
    USAGE,
    () => benchBatching(),
    (r) => {
      console.log('| mid MLP 512→4096→512, concurrency 32 | req/s | p99 ms |');
      console.log('|---|---|---|');
      console.log(`| batch_size 1 | ${r.rps1.toFixed(0)} | ${r.p99_1} |`);
      console.log(`| batch_size 16 | ${r.rps16.toFixed(0)} | ${r.p99_16} |`);
      console.log(`| in-process, batched the same way | ${r.inProcessRps!.toFixed(0)} | ${r.inProcessP99} |`);
      console.log(`\nbatching speed-up: ${r.ratio.toFixed(2)}× (target ≥ 2.5×) ${r.ratio >= 2.5 ? 'MET' : 'NOT MET'}`);
      const atLimit = r.inProcessRatio!;
      console.log(
        `over the in-process batcher: ${atLimit.toFixed(2)}× (target ≥ 0.9×) ${atLimit >= 0.9 ? 'MET' : 'NOT MET'}`,
      );
    },
  );
}
