/**
 * docs/workers.md's figures of the two worker modes ("Dedicated or shared"), rendered from the
 * committed run (bench-results/latest.json, the figures docs/performance.md numbers 4, 5 and 7):
 * each is a phrase inside a sentence or a table cell, which `node dist/scripts/docs-tables.js`
 * rewrites and test/docs/tables.test.ts holds to the run.
 */
import { median } from '../../../harness/statistics';
import type { BenchRun } from './results';

const ms = (v: number) => (v < 10 ? v.toFixed(1) : Math.round(v).toString());

/** The tiny model's cold start in a process of its own, without and with a spare process. */
function dedicatedCold(run: BenchRun): { cold: number; spare: number } {
  const tiny = (spares: number) => run.cold.find((c) => c.model === `tiny MLP 16→32→4, spare_workers=${spares}`);
  const [cold, spare] = [tiny(0), tiny(1)];
  if (!cold || !spare) throw new Error('latest.json has no tiny MLP cold start with and without a spare worker');
  return { cold: cold.p50Ms, spare: spare.p50Ms };
}

const sharedPerModelMB = (run: BenchRun) => median(run.shared.map((s) => s.perModelMB));

/** The prose's dedicated costs: PSS and the cold start. */
export function renderDedicatedCost(run: BenchRun): string {
  const { cold, spare } = dedicatedCold(run);
  return `~${Math.round(run.density.perModelMB)} MB PSS for a tiny model, and a cold load waits ~${ms(cold)} ms for the process to start (~${ms(spare)} ms with a spare)`;
}

/** The prose's shared cost: a tiny model's share of the whole server's PSS. */
export const renderSharedCost = (run: BenchRun) => `about ${sharedPerModelMB(run).toFixed(2)} MB`;

export const renderPssNote = (run: BenchRun) =>
  `${run.shared[0].models} tiny models in ${run.shared[0].hosts} hosts are ${Math.round(median(run.shared.map((s) => s.serverPssMB)))} MB`;

export const renderPssRow = (run: BenchRun) =>
  `${run.density.perModelMB.toFixed(1)} MB | ${sharedPerModelMB(run).toFixed(2)} MB`;

export function renderColdRow(run: BenchRun): string {
  const { cold, spare } = dedicatedCold(run);
  const p50 = median(run.shared.map((s) => s.coldP50Ms));
  const p99 = median(run.shared.map((s) => s.coldP99Ms));
  return `${ms(cold)} ms (${ms(spare)} ms with a spare) | ${ms(p50)} ms (p99 ${ms(p99)} ms)`;
}

export function renderThroughputRow(run: BenchRun): string {
  const random = median(run.shared.map((s) => s.randomRps));
  const dedicated = median(run.shared.map((s) => s.dedicatedRps));
  const ratio = median(run.shared.map((s) => s.ratio));
  return `one model, 1 worker: ${Math.round(dedicated)} req/s | random traffic over ${run.shared[0].models} models in ${run.shared[0].hosts} hosts: ${Math.round(random)} req/s = ${ratio.toFixed(2)}×`;
}

export function renderZipfRow(run: BenchRun): string {
  const mode = (m: string) => {
    const live = run.liveModes.find((l) => l.workerMode === m);
    if (!live) throw new Error(`latest.json has no cache-live run with worker_mode=${m}`);
    return live;
  };
  const [d, s] = [mode('dedicated'), mode('shared')];
  const hit = (v: number) => `${(v * 100).toFixed(1)} %`;
  const evicted = (n: number) => (n === 0 ? 'nothing evicted' : `${n} evictions`);
  return `hit ratio ${hit(d.hitRatio)}, p99 ${ms(d.p99Ms)} ms (${d.loaded} models loaded at the end, ${evicted(d.evictions)}) | hit ratio ${hit(s.hitRatio)}, p99 ${ms(s.p99Ms)} ms (${s.loaded} loaded, ${evicted(s.evictions)})`;
}

/** What a spare process saves a small model's cold start. */
export function renderSpareDrop(run: BenchRun): string {
  const { cold, spare } = dedicatedCold(run);
  return `cold start drops from ~${ms(cold)} ms (process start dominates) to ~${ms(spare)} ms`;
}

/** Figures 2k and 2l: tiny models beside a slow one in a shared host, against processes of their own. */
export function renderNoisyNeighbour(run: BenchRun): string {
  const rps = median(run.noisy.map((n) => n.rpsRatio));
  const p99 = median(run.noisy.map((n) => n.p99Ratio));
  return `in \`npm run bench\` (figures 2k and 2l, the median of ${run.noisy.length} runs), six tiny models at concurrency 1 beside a slow model on 4 connections in one host are served at ${rps.toFixed(2)}× the rate they get in processes of their own, with ${p99.toFixed(2)}× their p99`;
}
