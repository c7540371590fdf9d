/**
 * Does autoscaling ever make a model slower? Interleaved pairs of runs, each on a server of its
 * own: the defaults (autoscale on outside SageMaker) against autoscale=off, for the tiny MLP (the
 * server's own thread is its bottleneck) and for a CPU-bound model (slowMatmulModel, ~10 ms a
 * request), each loaded with one worker and room to scale to four (min_worker=1, max_worker=4:
 * with the default min = max there is nothing to scale), at 16 connections. Each pair's ratio is
 * its req/s on over off; the pairs alternate which side runs first, so a drift of the machine's
 * load does not favour one side. Target (part 28): ≥ 0.95× in every pair set (the median of its pairs).
 */
import { slowMatmulModel, writeModelDir, writeTinyMlp } from '../../../harness/onnx-models';
import { postJson, request } from '../../../harness/http-requests';
import { hammer } from '../../../harness/load-generator';
import { median } from '../../../harness/statistics';
import { benchDurations, benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { MLP_STORE_BODY } from '../kit/mlp-store';

const kConnections = 16;
/** The CPU-bound model's row width: n³ multiply-adds, about 10 ms a request on the 2-vCPU machine. */
const kMatmulN = 512;

export interface AutoscaleSide {
  rps: number;
  /** The model's workers at the end of the run, and its autoscaler's last decision (describe). */
  workers: number;
  lastDecision: unknown;
}

export interface AutoscalePairSet {
  model: string;
  pairs: Array<{ on: AutoscaleSide; off: AutoscaleSide; ratio: number }>;
  /** The median of the pairs' ratios: what the target is judged on. */
  ratio: number;
}

interface Subject {
  model: string;
  write(store: string): string;
  body: string;
}

const kSubjects: Subject[] = [
  { model: 'tiny MLP 16→32→4', write: (store) => writeTinyMlp(store), body: MLP_STORE_BODY },
  {
    model: `CPU-bound MatMul ${kMatmulN}`,
    write: (store) => writeModelDir(store, 'matmul', slowMatmulModel(kMatmulN)),
    body: JSON.stringify({ inputs: { input: [Array.from({ length: kMatmulN }, (_, i) => (i % 7) / 7)] } }),
  },
];

/** One run: a server of its own, the model at 1..4 workers, a warm-up, then one measured run at 16 connections. */
async function side(subject: Subject, autoscaleOn: boolean): Promise<AutoscaleSide> {
  const server = await startBenchServer(autoscaleOn ? [] : ['autoscale=off']);
  try {
    const url = subject.write(server.store);
    const loaded = await postJson(`${server.url}/models`, { model_name: 'm', url, initial_workers: 1 });
    if (loaded.status !== 200) throw new Error(`load: ${loaded.status} ${loaded.text}`);
    const scaled = await request(`${server.url}/models/m?min_worker=1&max_worker=4&synchronous=true`, {
      method: 'PUT',
    });
    if (scaled.status !== 200) throw new Error(`scale: ${scaled.status} ${scaled.text}`);
    const { seconds, warmupSeconds } = benchDurations();
    const invoke = `${server.url}/models/m/invoke`;
    await hammer(invoke, subject.body, { connections: kConnections, seconds: warmupSeconds });
    const run = await hammer(invoke, subject.body, { connections: kConnections, seconds });
    if (run.errors + run.non2xx > 0) throw new Error(`${run.errors} errors, ${run.non2xx} non-2xx answers`);
    const described = (await request(`${server.url}/models/m`)).body;
    return { rps: run.rps, workers: described.workers.length, lastDecision: described.autoscale?.lastDecision ?? null };
  } finally {
    await server.stop();
  }
}

export async function benchAutoscalePairs(pairs = process.env.BENCH_QUICK ? 1 : 3): Promise<AutoscalePairSet[]> {
  const out: AutoscalePairSet[] = [];
  for (const subject of kSubjects) {
    const set: AutoscalePairSet['pairs'] = [];
    for (let i = 0; i < pairs; i++) {
      // Alternate which side goes first.
      const onFirst = i % 2 === 0;
      const first = await side(subject, onFirst);
      const second = await side(subject, !onFirst);
      const [on, off] = onFirst ? [first, second] : [second, first];
      set.push({ on, off, ratio: on.rps / off.rps });
    }
    out.push({ model: subject.model, pairs: set, ratio: median(set.map((p) => p.ratio)) });
  }
  return out;
}

const USAGE = benchUsage(
  'npm run bench:autoscale-pairs',
  'Interleaved pairs, the defaults (autoscale on) over autoscale=off, for the tiny MLP and a CPU-bound model at 1..4 workers, 16 connections: req/s on over off per pair.',
);

if (require.main === module) runBench(USAGE, () => benchAutoscalePairs());
