/**
 * Back-to-back loads: 10 POST /models + DELETE cycles of the tiny MLP with no pause, with the
 * default spare_workers=1 (SageMaker's on-demand loads under eviction churn look like this). Each
 * load is judged against a floor measured in the same run: a fresh `node` that requires
 * onnxruntime-node and creates the same model's session, what a load with no spare cannot beat.
 * Targets (part 28): the slowest load ≤ 1.3× the floor, p50 ≤ 30 ms.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { postJson, request } from '../../../harness/http-requests';
import { median } from '../../../harness/statistics';
import { kRepoRoot } from '../../../harness/repo-root';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';

export interface BackToBackResult {
  cycles: number;
  /**
   * Each cycle's POST /models → 200, ms; the process start-up that load waited for, and the worker's
   * load (handler and session), as the server and the worker report them; the rest is the server's.
   */
  loadMs: number[];
  spawnMs: number[];
  workerLoadMs: number[];
  /** Each cycle's DELETE → 200, ms. */
  unloadMs: number[];
  /** Each run of the floor, ms; `floorMs` is their median. */
  floorRunsMs: number[];
  floorMs: number;
  p50Ms: number;
  slowestMs: number;
  slowestOverFloor: number;
}

/** The floor's runs: enough for a median on a noisy machine, few enough to stay seconds. */
const kFloorRuns = 5;

/** A fresh node that requires onnxruntime-node and creates the session (the workers' thread settings), until it says so. */
function floorOnce(onnxPath: string): Promise<number> {
  const program = `const ort = require('onnxruntime-node');
ort.InferenceSession.create(process.argv[1], { intraOpNumThreads: 1, interOpNumThreads: 1 }).then(() => console.log('ready'));`;
  const t0 = performance.now();
  const child = spawn(process.execPath, ['-e', program, onnxPath], {
    cwd: kRepoRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', () => {
      resolve(performance.now() - t0);
      child.kill('SIGKILL');
    });
    child.once('exit', (code) => reject(new Error(`the floor's node exited with ${code} before its session was made`)));
  });
}

export async function benchBackToBack(cycles = process.env.BENCH_QUICK ? 4 : 10): Promise<BackToBackResult> {
  const server = await startBenchServer();
  try {
    const dir = writeTinyMlp(server.store);
    const onnxPath = path.join(dir, 'model.onnx');
    const cycle = async () => {
      const t0 = performance.now();
      const res = await postJson(`${server.url}/models`, { model_name: 'b2b', url: dir, initial_workers: 1 });
      const loadMs = performance.now() - t0;
      if (res.status !== 200) throw new Error(`load answered ${res.status}: ${res.text}`);
      const described = await request(`${server.url}/models/b2b`);
      const t1 = performance.now();
      const gone = await request(`${server.url}/models/b2b`, { method: 'DELETE' });
      if (gone.status !== 200) throw new Error(`unload answered ${gone.status}: ${gone.text}`);
      const { spawn: spawnMicros, load } = described.body.workers[0].startupMicros as Record<string, number>;
      return { loadMs, spawnMs: spawnMicros / 1000, workerLoadMs: load / 1000, unloadMs: performance.now() - t1 };
    };
    // Warms the page cache and the server's own code paths, a load into a spare and one into a
    // process of its own (the second comes before the spare is back); the pause lets the spare start again.
    await cycle();
    await cycle();
    await new Promise((r) => setTimeout(r, 1000));
    const floorRunsMs: number[] = [];
    for (let i = 0; i < kFloorRuns; i++) floorRunsMs.push(await floorOnce(onnxPath));
    await new Promise((r) => setTimeout(r, 1000));
    const runs = [];
    for (let i = 0; i < cycles; i++) runs.push(await cycle());
    const loadMs = runs.map((r) => r.loadMs);
    const floorMs = median(floorRunsMs);
    const slowestMs = Math.max(...loadMs);
    return {
      cycles,
      loadMs,
      spawnMs: runs.map((r) => r.spawnMs),
      workerLoadMs: runs.map((r) => r.workerLoadMs),
      unloadMs: runs.map((r) => r.unloadMs),
      floorRunsMs,
      floorMs,
      p50Ms: median(loadMs),
      slowestMs,
      slowestOverFloor: slowestMs / floorMs,
    };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:back-to-back',
  '10 load/unload cycles of the tiny MLP with no pause (spare_workers=1, the default): each load, p50, the slowest over a fresh node + onnxruntime session measured in the same run.',
);

if (require.main === module) runBench(USAGE, () => benchBackToBack());
