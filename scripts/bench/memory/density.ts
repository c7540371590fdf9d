/**
 * Density: how many tiny models fit a 4 GiB model memory budget (load until the server answers
 * 507, as SageMaker would see it), and what one loaded tiny model costs (PSS of its worker).
 */
import fs from 'node:fs';
import path from 'node:path';
import { mlpModel } from '../../../harness/onnx-models';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { median } from '../../../harness/statistics';
import { postJson } from '../../../harness/http-requests';

export interface Density {
  budgetMB: number;
  modelsLoaded: number;
  perModelMB: number;
}

export async function benchDensity(budgetMB = process.env.BENCH_QUICK ? 512 : 4096): Promise<Density> {
  const server = await startBenchServer(['model_cache=off', `model_memory_budget_mb=${budgetMB}`, 'spare_workers=0']);
  try {
    const dir = path.join(server.store, 'tiny');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'model.onnx'), mlpModel({ sizes: [16, 32, 4] }));
    let loaded = 0;
    for (;;) {
      const res = await postJson(`${server.url}/models`, { model_name: `t${loaded}`, url: dir, initial_workers: 1 });
      if (res.status === 507) break;
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
      loaded++;
    }
    const list = (await (await fetch(`${server.url}/models?memory=true`)).json()) as {
      models: Array<{ memoryUsage: number }>;
    };
    return { budgetMB, modelsLoaded: loaded, perModelMB: median(list.models.map((m) => m.memoryUsage)) / 2 ** 20 };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'node dist/scripts/bench/memory/density.js',
  'How many tiny models fit a 4 GiB model memory budget, and what one costs.',
);

if (require.main === module) runBench(USAGE, benchDensity, (r) => console.log(r));
