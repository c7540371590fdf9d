/**
 * Dynamic batching pays: a 512→4096→512 MLP at concurrency 32, batch_size 16 against batch_size 1,
 * one worker each, same server, same run. Target: ≥ 2.5×.
 */
import fs from 'node:fs';
import path from 'node:path';
import { mlpModel } from '../../../harness/onnx-models';
import { benchDurations, benchUsage, measure, runBench, startBenchServer } from '../kit/bench-run';
import { postJson } from '../../../harness/http-requests';

export async function benchBatching(): Promise<{
  rps1: number;
  rps16: number;
  ratio: number;
  p99_1: number;
  p99_16: number;
}> {
  const server = await startBenchServer();
  try {
    const bytes = mlpModel({ sizes: [512, 4096, 512], seed: 5 });
    for (const [name, batch] of [
      ['b1', 1],
      ['b16', 16],
    ] as const) {
      const dir = path.join(server.store, name);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'model.onnx'), bytes);
      const res = await postJson(`${server.url}/models`, {
        model_name: name,
        url: dir,
        batch_size: batch,
        max_batch_delay: 5,
        initial_workers: 1,
      });
      if (res.status !== 200) throw new Error(`load ${name}: ${JSON.stringify(res.body)}`);
    }
    const body = JSON.stringify({ inputs: { input: [Array.from({ length: 512 }, (_, i) => Math.sin(i))] } });
    const d = benchDurations();
    const one = await measure(`${server.url}/models/b1/invoke`, body, 32, d);
    const sixteen = await measure(`${server.url}/models/b16/invoke`, body, 32, d);
    if (one.non2xx + sixteen.non2xx + one.errors + sixteen.errors > 0)
      throw new Error('non-2xx responses or errors during the batching bench');
    return { rps1: one.rps, rps16: sixteen.rps, ratio: sixteen.rps / one.rps, p99_1: one.p99, p99_16: sixteen.p99 };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:batching',
  'batch_size 16 against batch_size 1 on a 512→4096→512 MLP at concurrency 32.',
);

if (require.main === module) {
  runBench(USAGE, benchBatching, (r) => {
    console.log('| mid MLP 512→4096→512, concurrency 32 | req/s | p99 ms |');
    console.log('|---|---|---|');
    console.log(`| batch_size 1 | ${r.rps1.toFixed(0)} | ${r.p99_1} |`);
    console.log(`| batch_size 16 | ${r.rps16.toFixed(0)} | ${r.p99_16} |`);
    console.log(`\nbatching speed-up: ${r.ratio.toFixed(2)}× (target ≥ 2.5×) ${r.ratio >= 2.5 ? 'MET' : 'NOT MET'}`);
  });
}
