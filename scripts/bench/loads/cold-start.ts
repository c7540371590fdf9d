/**
 * Cold start: POST /models → 200 for a small model, p50 over repeated load/unload cycles
 * (target ≤ 150 ms under 10 MB), with the split between starting the worker process and
 * creating the session, as the worker reports it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { mlpModel, paddleOcrClsPath } from '../../../harness/onnx-models';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { median } from '../../../harness/statistics';
import { postJson } from '../../../harness/http-requests';

export interface ColdStart {
  model: string;
  sizeKB: number;
  p50Ms: number;
  spawnMs: number;
  sessionMs: number;
}

/**
 * `spareWorkers` 0 measures a load that starts its own process; 1 a load that takes the warm spare.
 * Loads are 0.5 s apart so the replacement spare is warm again, as when loads are not back to back.
 */
export async function benchColdStart(
  spareWorkers: number,
  cycles = process.env.BENCH_QUICK ? 5 : 20,
): Promise<ColdStart[]> {
  const server = await startBenchServer([`spare_workers=${spareWorkers}`]);
  const out: ColdStart[] = [];
  try {
    const models: Array<[string, Uint8Array]> = [
      ['tiny MLP 16→32→4', mlpModel({ sizes: [16, 32, 4] })],
      ['PaddleOCR cls', fs.readFileSync(paddleOcrClsPath())],
    ];
    for (const [label, bytes] of models) {
      const dir = path.join(server.store, `m${out.length}`);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'model.onnx'), bytes);
      const total: number[] = [];
      const spawn: number[] = [];
      const session: number[] = [];
      for (let i = 0; i < cycles + 2; i++) {
        const t0 = performance.now();
        const res = await postJson(`${server.url}/models`, { model_name: 'cold', url: dir, initial_workers: 1 });
        const ms = performance.now() - t0;
        if (res.status !== 200) throw new Error(JSON.stringify(res.body));
        const described = (await (await fetch(`${server.url}/models/cold`)).json()) as {
          workers: Array<{ startupMicros: { spawn: number; session: number } }>;
        };
        await fetch(`${server.url}/models/cold`, { method: 'DELETE' });
        await new Promise((r) => setTimeout(r, 500));
        if (i < 2) continue; // warm the page cache and the server's own code paths
        total.push(ms);
        spawn.push(described.workers[0].startupMicros.spawn / 1000);
        session.push(described.workers[0].startupMicros.session / 1000);
      }
      out.push({
        model: `${label}, spare_workers=${spareWorkers}`,
        sizeKB: bytes.length / 1024,
        p50Ms: median(total),
        spawnMs: median(spawn),
        sessionMs: median(session),
      });
    }
  } finally {
    await server.stop();
  }
  return out;
}

const USAGE = benchUsage(
  'npm run bench:cold-start',
  'POST /models → 200 for a small model, p50 over load/unload cycles, without and with a spare worker.',
);

if (require.main === module)
  runBench(
    USAGE,
    async () => [...(await benchColdStart(0)), ...(await benchColdStart(1))],
    (rows) => console.table(rows),
  );
