/**
 * Shared-mode loads (POST /models → 200, worker_mode=shared, no spare process): p50 one at a time,
 * then with 8 loads in flight, as SageMaker sends them under traffic; the same server and store.
 * With 8 in flight the 2 cores are the limit, so the client is node:http (postJsonLean), not fetch.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { postJsonLean } from '../../../harness/http-requests';
import { percentiles, type Percentiles } from '../kit/latency';
import { writeMlpStore } from '../kit/mlp-store';

export interface SharedLoadsResult {
  alone: Percentiles;
  inFlight8: Percentiles;
  loads: number;
}

const kInFlight = 8;

export async function benchSharedLoads(loads = process.env.BENCH_QUICK ? 32 : 160): Promise<SharedLoadsResult> {
  const server = await startBenchServer([
    'worker_mode=shared',
    'model_cache=off',
    'spare_workers=0',
    'model_memory_budget_mb=8192',
  ]);
  try {
    writeMlpStore(server.store, 2 * loads + 1);
    let next = 0;
    const loadOne = async (): Promise<number> => {
      const name = `m${next++}`;
      const t0 = performance.now();
      const res = await postJsonLean(`${server.url}/models`, { model_name: name, url: path.join(server.store, name) });
      if (res.status !== 200) throw new Error(`load ${name}: ${res.status} ${JSON.stringify(res.body)}`);
      return performance.now() - t0;
    };
    await loadOne(); // also waits for the first host to start
    const alone: number[] = [];
    for (let i = 0; i < loads; i++) alone.push(await loadOne());
    const inFlight: number[] = [];
    let left = loads;
    await Promise.all(
      Array.from({ length: kInFlight }, async () => {
        while (left-- > 0) inFlight.push(await loadOne());
      }),
    );
    return { alone: percentiles(alone), inFlight8: percentiles(inFlight), loads };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:shared-loads',
  'Shared-mode load latency, one at a time and with 8 loads in flight.',
);

if (require.main === module) runBench(USAGE, () => benchSharedLoads());
