/**
 * What shared worker hosts cost, as the sizing planner prices them (scripts/plan/assumptions.ts):
 * the PSS of a host holding one tiny model, and what each further tiny model's session adds to the
 * hosts' PSS, over a few hundred models loaded through POST /models.
 */
import path from 'node:path';
import { descendantsOf, treePssBytes } from '../../../harness/process-probes';
import { postJson } from '../../../harness/http-requests';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { writeMlpStore } from '../kit/mlp-store';

export interface SharedFootprint {
  hosts: number;
  /** Mean PSS of one host holding one model, MiB. */
  hostMiB: number;
  /** Models loaded after the first. */
  models: number;
  /** The hosts' PSS growth over those models, per model, MiB. */
  sessionMiB: number;
}

const MiB = 2 ** 20;

export async function benchSharedFootprint(models = process.env.BENCH_QUICK ? 100 : 400): Promise<SharedFootprint> {
  const server = await startBenchServer([
    'worker_mode=shared',
    'model_cache=off',
    'spare_workers=0',
    'model_memory_budget_mb=8192',
  ]);
  try {
    writeMlpStore(server.store, models + 1);
    const load = async (i: number) => {
      const res = await postJson(`${server.url}/models`, {
        model_name: `m${i}`,
        url: path.join(server.store, `m${i}`),
      });
      if (res.status !== 200) throw new Error(`load m${i}: ${res.status} ${JSON.stringify(res.body)}`);
    };
    // The server's own PSS is left out: the planner keeps model_memory_reserve_mb for it.
    const hostsPss = async () => {
      const sizes = await Promise.all(descendantsOf(server.child.pid!).map((pid) => treePssBytes(pid)));
      return { hosts: sizes.length, bytes: sizes.reduce((a, b) => a + b, 0) };
    };
    await load(0);
    const first = await hostsPss();
    for (let i = 1; i <= models; i++) await load(i);
    const after = await hostsPss();
    if (after.hosts !== first.hosts)
      throw new Error(`the hosts went from ${first.hosts} to ${after.hosts} during the loads`);
    return {
      hosts: first.hosts,
      hostMiB: first.bytes / first.hosts / MiB,
      models,
      sessionMiB: (after.bytes - first.bytes) / models / MiB,
    };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'node dist/scripts/bench/memory/shared-footprint.js',
  'PSS of a shared host with one tiny model, and what each further tiny model adds.',
);

if (require.main === module) runBench(USAGE, () => benchSharedFootprint());
