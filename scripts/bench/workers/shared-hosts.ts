/**
 * Shared worker hosts (worker_mode=shared), in one server started from the CLI:
 * - 1000 distinct tiny models loaded one after another through POST /models: the whole server's
 *   PSS (server + hosts) and each load's latency (cold loads: there is no spare process to take);
 * - random-model traffic over those 1000 models at 16 connections, against one dedicated model
 *   (1 worker) in the same server, the same run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { descendantsOf, treePssBytes } from '../../../harness/process-probes';
import { hammer } from '../../../harness/load-generator';
import { benchDurations, benchUsage, measure, runBench, startBenchServer } from '../kit/bench-run';
import { median } from '../../../harness/statistics';
import { postJsonLean } from '../../../harness/http-requests';
import { percentiles } from '../kit/latency';
import { MLP_STORE_BODY, writeMlpStore } from '../kit/mlp-store';

export interface SharedHosts {
  models: number;
  hosts: number;
  serverPssMB: number;
  perModelMB: number;
  coldP50Ms: number;
  coldP99Ms: number;
  randomRps: number;
  dedicatedRps: number;
  ratio: number;
}

/** Load at `connections` for `seconds`, each request to a model drawn at random. */
async function randomModels(url: string, models: number, connections: number, seconds: number): Promise<number> {
  const r = await hammer(url, MLP_STORE_BODY, {
    connections,
    seconds,
    pathOf: () => `/models/m${Math.floor(Math.random() * models)}/invoke`,
  });
  if (r.errors + r.non2xx > 0) throw new Error(`random-model traffic: ${r.errors} errors, ${r.non2xx} non-2xx`);
  return r.rps;
}

/** `models` tiny models loaded through POST /models, `inFlight` at a time (SageMaker sends loads under traffic). */
export async function benchSharedHosts(
  models = process.env.BENCH_QUICK ? 200 : 1000,
  inFlight = 1,
): Promise<SharedHosts> {
  const server = await startBenchServer([
    'worker_mode=shared',
    'model_cache=off',
    'spare_workers=0',
    'model_memory_budget_mb=8192',
  ]);
  try {
    writeMlpStore(server.store, models);
    const loads: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let i = next++; i < models; i = next++) {
          const t0 = performance.now();
          const res = await postJsonLean(`${server.url}/models`, {
            model_name: `m${i}`,
            url: path.join(server.store, `m${i}`),
          });
          if (res.status !== 200) throw new Error(`load m${i}: ${res.status} ${JSON.stringify(res.body)}`);
          loads.push(performance.now() - t0);
        }
      }),
    );
    const cold = percentiles(loads.slice(1)); // the first load also waits for the hosts to start
    const pss = await treePssBytes(server.child.pid!);
    const hosts = descendantsOf(server.child.pid!).length;

    const solo = path.join(server.store, 'solo');
    fs.cpSync(path.join(server.store, 'm0'), solo, { recursive: true });
    const res = await postJsonLean(`${server.url}/models`, {
      model_name: 'solo',
      url: solo,
      worker_mode: 'dedicated',
      initial_workers: 1,
    });
    if (res.status !== 200) throw new Error(`load solo: ${res.status} ${JSON.stringify(res.body)}`);
    const d = benchDurations();
    const dedicated = await measure(`${server.url}/models/solo/invoke`, MLP_STORE_BODY, 16, d);
    await randomModels(server.url, models, 16, d.warmupSeconds);
    const runs: number[] = [];
    for (let i = 0; i < d.reps; i++) runs.push(await randomModels(server.url, models, 16, d.seconds));
    const randomRps = median(runs);
    return {
      models,
      hosts,
      serverPssMB: pss / 2 ** 20,
      perModelMB: pss / models / 2 ** 20,
      coldP50Ms: cold.p50,
      coldP99Ms: cold.p99,
      randomRps,
      dedicatedRps: dedicated.rps,
      ratio: randomRps / dedicated.rps,
    };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:shared-hosts [-- MODELS [IN_FLIGHT]]',
  'MODELS (1000) tiny models in worker_mode=shared, loaded IN_FLIGHT (1) at a time: memory, load latency, and random traffic over them against one dedicated model.',
);

if (require.main === module) {
  const [models, inFlight] = process.argv.slice(2).map(Number);
  runBench(
    USAGE,
    () => benchSharedHosts(models || undefined, inFlight || 1),
    (r) => console.log(r),
  );
}
