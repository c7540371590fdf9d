/**
 * The bench's charts, drawn from its JSON with Vega-Lite and written as bench-results/*.svg, which
 * docs/performance.md shows. Each SVG starts with a comment holding the SHA-256 of the Vega-Lite
 * spec it was drawn from (data included), so test/docs can tell a stale chart without drawing it.
 * `node dist/scripts/bench/report/charts.js` redraws them from the committed bench-results/latest.json.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from '../../../harness/statistics';
import { printedHelp } from '../../cli-flags';
import { figureRows, type FigureRow } from './figures';
import { readRun, RESULTS_DIR, type BenchRun } from './results';

/** A Vega-Lite spec: plain JSON, built here and handed to the library as is. */
type Spec = Record<string, unknown>;

export interface Chart {
  /** The file under bench-results/. */
  file: string;
  title: string;
  spec: Spec;
}

/** Where the model-count bench (issue 30, item 6) leaves its raw outputs. */
export const MODEL_COUNT_DIR = path.join(RESULTS_DIR, 'part21-model-count');

/** One row of a model-count output: what one operation costs with `models` models held. */
export interface ModelCountRow {
  models: number;
  operation: string;
  microsPerOp: number;
}

const kWidth = 420;
const kHeight = 260;
/** Text is measured without a canvas, so one plain font keeps the SVGs the same on every machine. */
const kConfig = { font: 'sans-serif', view: { stroke: null }, axis: { grid: true, gridOpacity: 0.4 } };

function base(title: string, extra: Spec): Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    config: kConfig,
    ...extra,
  };
}

/** Throughput and p99 against connections, ours and the in-process server. */
function connectionsChart(run: BenchRun): Chart {
  const layer = (field: 'rps' | 'p99', title: string): Spec => ({
    width: kWidth / 2,
    height: kHeight,
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'connections', type: 'quantitative', scale: { type: 'log', base: 2 }, title: 'connections' },
      y: { field, type: 'quantitative', title, ...(field === 'p99' ? { scale: { type: 'log' } } : {}) },
      color: { field: 'server', type: 'nominal', title: 'server' },
    },
  });
  return {
    file: 'connections.svg',
    title: 'Tiny MLP: throughput and p99 by connections',
    spec: base('Tiny MLP 16→32→4, one worker: ours and the in-process server', {
      data: { values: run.connections },
      hconcat: [layer('rps', 'requests / s'), layer('p99', 'p99 latency, ms (log)')],
    }),
  };
}

/** c=1 latency CDFs, each quantile the median over the runs, and beside them the tail on a log scale. */
function cdfChart(run: BenchRun): Chart {
  const series = { dedicated: 'ours, dedicated', shared: 'ours, shared host', inProcess: 'in-process server' } as const;
  const values = (Object.keys(series) as Array<keyof typeof series>).flatMap((key) =>
    run.tail[0].cdf[key].map((point, i) => ({
      server: series[key],
      q: point.q,
      slower: 1 - point.q,
      ms: median(run.tail.map((t) => t.cdf[key][i].ms)),
    })),
  );
  const x = { field: 'ms', type: 'quantitative', scale: { type: 'log' }, title: 'latency, ms (log)' };
  const color = { field: 'server', type: 'nominal', title: null };
  return {
    file: 'latency-cdf.svg',
    title: 'Latency at concurrency 1',
    spec: base(`Tiny MLP at concurrency 1 (median of ${run.tail.length} runs of ${run.tail[0].requests} requests)`, {
      data: { values },
      hconcat: [
        {
          width: kWidth / 2,
          height: kHeight,
          mark: 'line',
          encoding: { x, y: { field: 'q', type: 'quantitative', title: 'fraction of requests' }, color },
        },
        {
          width: kWidth / 2,
          height: kHeight,
          transform: [{ filter: 'datum.q >= 0.5' }],
          mark: { type: 'line', point: true },
          encoding: {
            x,
            y: {
              field: 'slower',
              type: 'quantitative',
              scale: { type: 'log', reverse: true },
              axis: { values: [0.5, 0.1, 0.01, 0.001, 0.0001], format: '~g' },
              title: 'fraction slower (0.01: p99, 0.001: p99.9)',
            },
            color,
          },
        },
      ],
    }),
  };
}

/** The cache simulator: hit ratio against room for each policy, Belady's look-ahead dashed. */
function cacheSimChart(run: BenchRun): Chart {
  return {
    file: 'cache-sim.svg',
    title: 'Cache simulator: hit ratio by room',
    spec: base('Cache simulator, Zipf trace (300 models, ~10 GiB): hit ratio by room', {
      data: { values: run.simRoom.filter((p) => p.trace === 'zipf') },
      width: kWidth,
      height: kHeight,
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'roomGiB', type: 'quantitative', title: 'room, GiB' },
        y: { field: 'hitRatio', type: 'quantitative', title: 'hit ratio', axis: { format: '.0%' } },
        color: { field: 'policy', type: 'nominal', title: 'policy' },
        strokeDash: {
          condition: { test: "indexof(datum.policy, 'Belady') === 0", value: [4, 3] },
          value: [1, 0],
        },
      },
    }),
  };
}

/** Each ratio judged against a target: every run's value, and the target beside it. */
function ratiosChart(run: BenchRun): Chart {
  const rows = figureRows(run).filter((r) => r.ratio);
  const label = (r: FigureRow) => `${r.id}: ${r.figure.length > 60 ? `${r.figure.slice(0, 57)}…` : r.figure}`;
  const values = rows.flatMap((r) => [
    ...r
      .ratio!.values.filter((value) => Number.isFinite(value))
      .map((value) => ({ figure: label(r), value, kind: r.met ? 'run (target met)' : 'run (missed)' })),
    { figure: label(r), value: r.ratio!.bound, kind: `target (${r.target!.slice(0, 1)})` },
  ]);
  return {
    file: 'ratios.svg',
    title: 'Every ratio against its target',
    spec: base(`Every ratio of the run, each of its ${run.repeats} runs, against its target`, {
      data: { values },
      width: kWidth,
      mark: { type: 'point', filled: true, size: 60 },
      encoding: {
        y: { field: 'figure', type: 'nominal', sort: null, title: null, axis: { labelLimit: 420 } },
        x: { field: 'value', type: 'quantitative', scale: { type: 'log' }, title: '× (log)' },
        color: { field: 'kind', type: 'nominal', title: null },
        shape: { field: 'kind', type: 'nominal', title: null },
      },
    }),
  };
}

/** Every model-count output in bench-results/part21-model-count, or why there is none. */
export function readModelCount(
  dir = MODEL_COUNT_DIR,
  file = 'full.json',
): { rows: ModelCountRow[] } | { missing: string } {
  const where = path.join(path.relative(RESULTS_DIR, dir), file);
  if (!fs.existsSync(path.join(dir, file))) return { missing: `${where} is not committed` };
  // npm run bench:model-count writes one row per model count: { n, registerMicros, pageMicros, … }.
  const parsed = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { structures?: unknown };
  const rows: ModelCountRow[] = [];
  for (const row of Array.isArray(parsed.structures) ? (parsed.structures as Array<Record<string, unknown>>) : []) {
    if (typeof row.n !== 'number') continue;
    for (const [key, value] of Object.entries(row)) {
      const op = /^(.+)Micros$/.exec(key);
      if (op && typeof value === 'number') rows.push({ models: row.n, operation: op[1], microsPerOp: value });
    }
  }
  return rows.length > 0 ? { rows } : { missing: `${where} has no structures rows of { n, <operation>Micros }` };
}

function modelCountChart(rows: ModelCountRow[]): Chart {
  return {
    file: 'model-count.svg',
    title: 'Per-operation cost by model count',
    spec: base('Per-operation cost by the number of models held', {
      data: { values: rows },
      width: kWidth,
      height: kHeight,
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'models', type: 'quantitative', scale: { type: 'log' }, title: 'models (log)' },
        y: { field: 'microsPerOp', type: 'quantitative', scale: { type: 'log' }, title: 'µs per operation (log)' },
        color: { field: 'operation', type: 'nominal', title: 'operation' },
      },
    }),
  };
}

/** The charts a run supports, and a note for each one it cannot draw. */
export function charts(run: BenchRun, modelCount = readModelCount()): { charts: Chart[]; skipped: string[] } {
  const out = [ratiosChart(run), connectionsChart(run), cdfChart(run), cacheSimChart(run)];
  if ('rows' in modelCount) return { charts: [...out, modelCountChart(modelCount.rows)], skipped: [] };
  return { charts: out, skipped: [`per-operation cost by model count: ${modelCount.missing}`] };
}

export function specDigest(spec: Spec): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex');
}

/** The first line of each SVG: what drew it, from what. */
export function svgHeader(chart: Chart): string {
  return `<!-- Drawn by node dist/scripts/bench/report/charts.js from bench-results/latest.json; spec sha256 ${specDigest(chart.spec)} -->`;
}

interface VegaLite {
  compile(spec: Spec): { spec: object };
}
interface Vega {
  parse(spec: object): object;
  View: new (runtime: object, opts: { renderer: 'none' }) => { toSVG(): Promise<string>; finalize(): void };
}

/**
 * This CommonJS build compiles `import()` into `require()`, and vega's ES modules use top-level
 * await, which `require()` refuses: the specifier is imported from a function TypeScript leaves alone.
 */
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** vega and vega-lite are dev dependencies, loaded only to draw; resolved as require() would (NODE_PATH included). */
async function loadVega(): Promise<{ vega: Vega; vegaLite: VegaLite }> {
  try {
    const load = (name: string) => importModule(pathToFileURL(require.resolve(name)).href);
    const [vega, vegaLite] = await Promise.all([load('vega'), load('vega-lite')]);
    return { vega: vega as Vega, vegaLite: vegaLite as VegaLite };
  } catch (err) {
    throw new Error(`drawing the charts needs the dev dependencies vega and vega-lite (npm ci): ${String(err)}`);
  }
}

export async function renderSvg(chart: Chart): Promise<string> {
  const { vega, vegaLite } = await loadVega();
  const view = new vega.View(vega.parse(vegaLite.compile(chart.spec).spec), { renderer: 'none' });
  try {
    return `${svgHeader(chart)}\n${await view.toSVG()}\n`;
  } finally {
    view.finalize();
  }
}

/** Draws every chart `run` supports into bench-results/, and removes a chart it no longer supports. */
export async function writeCharts(run: BenchRun, dir = RESULTS_DIR): Promise<string[]> {
  const { charts: list, skipped } = charts(run);
  for (const chart of list) fs.writeFileSync(path.join(dir, chart.file), await renderSvg(chart));
  if (skipped.length > 0) fs.rmSync(path.join(dir, 'model-count.svg'), { force: true });
  return skipped;
}

const USAGE = `Usage: node dist/scripts/bench/report/charts.js
  Draws bench-results/*.svg from bench-results/latest.json (needs the dev dependencies vega and vega-lite).`;

if (require.main === module && !printedHelp(USAGE)) {
  writeCharts(readRun()).then(
    (skipped) => skipped.forEach((s) => console.log(`skipped: ${s}`)),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
