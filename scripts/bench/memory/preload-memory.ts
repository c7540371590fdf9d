/**
 * Memory of a model's workers with preload_model off (N processes, N copies of the weights) and
 * on (one process, N slots), measured as the PSS the server reports in describe.
 */
import fs from 'node:fs';
import path from 'node:path';
import { mlpModel } from '../../../harness/onnx-models';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { postJson } from '../../../harness/http-requests';

const kWorkers = 4;

export async function benchPreloadMemory(): Promise<
  Array<{ model: string; weightsMB: number; offMB: number; onMB: number }>
> {
  const server = await startBenchServer();
  const rows: Array<{ model: string; weightsMB: number; offMB: number; onMB: number }> = [];
  try {
    const models: Array<[string, Uint8Array]> = [
      ['mlp-512x4096x512', mlpModel({ sizes: [512, 4096, 512] })],
      ['mlp-1024x8192x1024', mlpModel({ sizes: [1024, 8192, 1024] })],
    ];
    for (const [name, bytes] of models) {
      const mb: Record<string, number> = {};
      for (const preload of [false, true]) {
        const id = `${name}-${preload}`;
        const dir = path.join(server.store, id);
        fs.mkdirSync(dir);
        fs.writeFileSync(path.join(dir, 'model.onnx'), bytes);
        const res = await postJson(`${server.url}/models`, {
          model_name: id,
          url: dir,
          initial_workers: kWorkers,
          preload_model: preload,
        });
        if (res.status !== 200) throw new Error(JSON.stringify(res.body));
        const described = (await (await fetch(`${server.url}/models/${id}`)).json()) as { memoryUsage: number };
        mb[String(preload)] = described.memoryUsage / 2 ** 20;
        await fetch(`${server.url}/models/${id}`, { method: 'DELETE' });
      }
      rows.push({ model: name, weightsMB: bytes.length / 2 ** 20, offMB: mb.false, onMB: mb.true });
    }
  } finally {
    await server.stop();
  }
  return rows;
}

const USAGE = benchUsage('npm run bench:preload-memory', "Memory of a model's workers with preload_model off and on.");

if (require.main === module) {
  runBench(USAGE, benchPreloadMemory, (rows) => {
    console.log(`| model (${kWorkers} workers) | weights MB | preload_model=false MB | preload_model=true MB |`);
    console.log('|---|---|---|---|');
    for (const r of rows)
      console.log(`| ${r.model} | ${r.weightsMB.toFixed(1)} | ${r.offMB.toFixed(1)} | ${r.onMB.toFixed(1)} |`);
  });
}
