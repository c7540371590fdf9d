/**
 * T-P4 eviction_cycle: SageMaker's side of memory pressure, emulated. Distinct models are loaded
 * one after another under a small memory budget; each 507 is answered as SageMaker answers it,
 * by unloading the least recently used model and loading again, which must then succeed. The
 * server must say 507 itself, before any worker is killed, and leak nothing along the way.
 */
import assert from 'node:assert/strict';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { withCliServer } from '../../harness/cli-server';
import { footprint, leakVerdict, type Footprint, type LeakVerdict } from '../../harness/footprint';
import { rssBytes } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';

export interface EvictionCycleResult extends LeakVerdict {
  /** Loads answered 507 (each then succeeded after an unload). */
  refusals: number;
  /** Most models loaded at once. */
  mostLoaded: number;
}

const kSpec = { sizes: [4, 8, 3], seed: 1 };

/** `rssGrowthLimit`: the server's most RSS growth from the middle of the run to its end; null: not judged (npm test). */
export function runEvictionCycle(
  loads: number,
  budgetMb: number,
  rssGrowthLimit: number | null = 50 * 2 ** 20,
): Promise<EvictionCycleResult> {
  return withCliServer(`model_cache=off\nmodel_memory_budget_mb=${budgetMb}`, async (s, store) => {
    const samples: Footprint[] = [];
    const lru: string[] = [];
    let refusals = 0;
    let mostLoaded = 0;
    for (let i = 1; i <= loads; i++) {
      const name = `m${i}`;
      const dir = writeModelDir(store, name, mlpModel({ ...kSpec, seed: i }));
      let res = await loadModel(s, name, dir);
      if (res.status === 507) {
        refusals++;
        const victim = lru.shift()!;
        assert.equal(
          (await request(`${s.url}/models/${victim}`, { method: 'DELETE' })).status,
          200,
          `unload ${victim}`,
        );
        res = await loadModel(s, name, dir);
      }
      assert.equal(res.status, 200, `${name} after unloading the least recently used model: ${res.text}`);
      lru.push(name);
      mostLoaded = Math.max(mostLoaded, lru.length);
      // Use the oldest model again, as traffic would: it becomes the most recently used.
      const used = lru.shift()!;
      assert.equal((await invoke(s, used, [[1, 2, 3, 4]])).status, 200, `invoke ${used}`);
      lru.push(used);
      // The server alone: how many models fit varies by one as their measured memory settles.
      samples.push({ ...footprint(s), rssBytes: rssBytes(s.pid) });
    }
    // Compared while the budget is full, the steady state: one worker per loaded model.
    const verdict = leakVerdict(samples, { rssGrowthBytes: rssGrowthLimit, fdSlack: 5, processes: lru.length });
    for (const name of lru) assert.equal((await request(`${s.url}/models/${name}`, { method: 'DELETE' })).status, 200);
    const after = footprint(s);
    if (after.processes + after.zombies + after.orphans > 0)
      verdict.problems.push(`after unloading everything: ${JSON.stringify(after)}`);
    // The budget said no before memory ran out: no worker died on its own.
    const deaths = s.lines.filter((l) => /killed by SIGKILL|exited with code .*; restarting/.test(l));
    if (deaths.length > 0) verdict.problems.push(`workers died: ${deaths.join(' | ')}`);
    return { ...verdict, ok: verdict.problems.length === 0, refusals, mostLoaded };
  });
}
