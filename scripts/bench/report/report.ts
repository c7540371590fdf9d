/**
 * What a bench run's JSON becomes in prose and tables: bench-results/latest.md, the figures section of
 * docs/performance.md and the README's summary. `node dist/scripts/bench/report/report.js` rewrites
 * latest.md; `node dist/scripts/docs-tables.js` rewrites the sections; test/docs fails when any of
 * them differs from what the committed latest.json renders.
 */
import fs from 'node:fs';
import { median } from '../../../harness/statistics';
import { printedHelp } from '../../cli-flags';
import { charts } from './charts';
import { figureRows, renderFigureTable, renderProvenance } from './figures';
import { LATEST_MD, readRun, type BenchRun } from './results';

export function renderLatestMd(run: BenchRun): string {
  const { charts: list, skipped } = charts(run);
  return [
    '# Latest bench run',
    '',
    `Written by \`${run.command}\` from [latest.json](latest.json), which holds every raw figure; do not edit by hand.`,
    '',
    renderProvenance(run),
    '',
    renderFigureTable(figureRows(run)),
    '',
    '| part of the run | minutes | load average at its start |',
    '|---|---|---|',
    ...run.sections.map((s) => `| ${s.name} | ${(s.seconds / 60).toFixed(1)} | ${s.loadAverage.toFixed(1)} |`),
    '',
    ...list.map((c) => `![${c.title}](${c.file})`),
    ...skipped.map((s) => `\nNo chart of the ${s}.`),
    '',
  ].join('\n');
}

/**
 * docs/performance.md's generated section: the run, its figures and its charts. The docs state what
 * was measured; each figure against its target is bench-results/latest.md's (and its ratios chart's).
 */
export function renderPerformanceSection(run: BenchRun): string {
  const { charts: list, skipped } = charts(run);
  return [
    renderProvenance(run),
    '',
    renderFigureTable(figureRows(run), { targets: false }),
    '',
    ...list.filter((c) => c.file !== 'ratios.svg').map((c) => `![${c.title}](../bench-results/${c.file})`),
    ...skipped.map((s) => `\nNo chart of the ${s}.`),
  ].join('\n');
}

/** The README's summary: the headline figures of the committed run, each with its run spread. */
export function renderReadmeSummary(run: BenchRun): string {
  const med = <T>(runs: T[], pick: (r: T) => number) => median(runs.map(pick));
  const x = (v: number) => `${v.toFixed(2)}×`;
  return [
    `On a ${run.machine.cpus}-vCPU VM (\`${run.command}\` at ${run.commit}, ${run.started.slice(0, 10)}, load average`,
    `${run.loadAverage.start.toFixed(1)}), against an in-process \`node:http\` + onnxruntime server measured in the same run:`,
    `a tiny model at 16 connections runs at ${x(med(run.hot, (h) => h.throughputRatio))} its throughput; at concurrency 1,`,
    `p99 is ${x(med(run.tail, (t) => t.p99Ratio))} and p99.9 ${x(med(run.tail, (t) => t.p999Ratio))} of its own; a .npy image at 4 connections`,
    `runs at ${x(med(run.plane, (p) => p.npy.ratio))}. A tiny model beside a slow one in a shared host is served at`,
    `${x(med(run.noisy, (n) => n.rpsRatio))} the rate of one in a process of its own; 8 shared loads in flight take`,
    `${run.sharedLoads.inFlight8.p50.toFixed(1)} ms p50, and ${run.shared[0].models} shared models fit in`,
    `${med(run.shared, (s) => s.serverPssMB).toFixed(0)} MB. Each is the median of ${run.repeats} runs. Every figure, each run's value`,
    'and the charts: [Performance](docs/performance.md); each against its target:',
    '[`bench-results/latest.md`](bench-results/latest.md).',
    ...(run.quick
      ? ['', '**This is a BENCH_QUICK run, which only checks the harness: rerun `npm run bench` on a quiet machine.**']
      : []),
  ].join('\n');
}

const USAGE = `Usage: node dist/scripts/bench/report/report.js
  Rewrites bench-results/latest.md from bench-results/latest.json.`;

if (require.main === module && !printedHelp(USAGE)) fs.writeFileSync(LATEST_MD, renderLatestMd(readRun()));
