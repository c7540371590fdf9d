/**
 * The noisy neighbour, in one server: six tiny models and one slow model (slowMatmulModel, tens of
 * ms a row) with 4 connections on the slow one while tiny requests go one at a time, in turn over
 * the six. Once with all seven in shared hosts, once with all seven dedicated (one process each);
 * the figure is shared over dedicated: tiny req/s and tiny p99.
 */
import { slowMatmulModel, writeModelDir, writeTinyMlp } from '../../../harness/onnx-models';
import { benchDurations, benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { hammer, type Hammered } from '../../../harness/load-generator';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';
import { percentiles, sequentialSamples, type Percentiles } from '../kit/latency';
import { MLP_STORE_BODY } from '../kit/mlp-store';

/** The slow model's row width: n³ multiply-adds, ~35 ms on the 2-vCPU bench machine when it is quiet. */
const kSlowN = 1280;
const kTiny = 6;

export interface NeighbourMode {
  tinyRps: number;
  tiny: Percentiles;
  slow: Hammered;
}

export interface NoisyNeighbourResult {
  shared: NeighbourMode;
  dedicated: NeighbourMode;
  rpsRatio: number;
  p99Ratio: number;
}

export async function benchNoisyNeighbour(settings: BenchSettings = settingsFromEnv()): Promise<NoisyNeighbourResult> {
  const server = await startBenchServer(['spare_workers=0'], { settings });
  try {
    const tinyDir = writeTinyMlp(server.store);
    const slowDir = writeModelDir(server.store, 'slow', slowMatmulModel(kSlowN));
    const slowBody = JSON.stringify({ inputs: { input: [Array.from({ length: kSlowN }, (_, i) => (i % 7) / 7)] } });
    const d = benchDurations();
    const run = async (mode: 'shared' | 'dedicated'): Promise<NeighbourMode> => {
      const names = Array.from({ length: kTiny }, (_, i) => `${mode}-tiny${i}`);
      for (const [name, url] of [[`${mode}-slow`, slowDir], ...names.map((n) => [n, tinyDir])])
        await server.loadModel({ model_name: name, url, worker_mode: mode });
      const tinyUrls = names.map((n) => `${server.url}/models/${n}/invoke`);
      await sequentialSamples(tinyUrls, MLP_STORE_BODY, 200, 0);
      const seconds = d.seconds * d.reps;
      const slowLoad = hammer(`${server.url}/models/${mode}-slow/invoke`, slowBody, { connections: 4, seconds });
      let slowDone = false;
      void slowLoad.finally(() => (slowDone = true));
      const started = performance.now();
      const samples: number[] = [];
      while (!slowDone) samples.push(...(await sequentialSamples(tinyUrls, MLP_STORE_BODY, 12, 0)));
      const tinySeconds = (performance.now() - started) / 1000;
      const slow = await slowLoad;
      if (slow.errors + slow.non2xx > 0)
        throw new Error(`slow model (${mode}): ${slow.errors} errors, ${slow.non2xx} non-2xx`);
      for (const name of [`${mode}-slow`, ...names]) await fetch(`${server.url}/models/${name}`, { method: 'DELETE' });
      return { tinyRps: samples.length / tinySeconds, tiny: percentiles(samples), slow };
    };
    const dedicated = await run('dedicated');
    const shared = await run('shared');
    return {
      shared,
      dedicated,
      rpsRatio: shared.tinyRps / dedicated.tinyRps,
      p99Ratio: shared.tiny.p99 / dedicated.tiny.p99,
    };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:noisy-neighbour',
  'Six tiny models beside one slow model: shared hosts against dedicated processes.',
);

if (require.main === module) runBench(USAGE, () => benchNoisyNeighbour());
