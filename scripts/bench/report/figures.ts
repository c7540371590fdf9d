/**
 * Every figure of a bench run against its target, as rows of one table: bench-results/latest.md,
 * docs/performance.md and the README's summary are all rendered from these. A ratio's bench runs
 * `repeats` times: the row gives the median and each run's value, and the target is judged on the median.
 */
import { median } from '../../../harness/statistics';
import { kOtherSettings, type OtherSettings } from '../kit/bench-settings';
import type { BenchRun, SettingsFigures } from './results';

export interface FigureRow {
  id: string;
  figure: string;
  measured: string;
  /** The target as the issues set it, e.g. "≥ 0.8×"; absent for a figure that only describes. */
  target?: string;
  met?: boolean;
  /** For a ratio judged against a bound: each run's value and the bound, for the chart of ratios. */
  ratio?: { values: number[]; bound: number };
}

/**
 * A figure a run could not measure (no request answered in a short run on a busy machine) is NaN,
 * which JSON writes as null: printed as "n/a", never a target met.
 */
const known = (f: (x: number) => string) => (x: number | null) => (x === null || !Number.isFinite(x) ? 'n/a' : f(x));
const ms = known((x) => `${x.toFixed(2)} ms`);
const pct = known((x) => `${(x * 100).toFixed(1)} %`);
const times = known((x) => `${x.toFixed(2)}×`);
const whole = known((x) => x.toFixed(0));
const mb = known((x) => `${x.toFixed(0)} MB`);

/** The median, or NaN when a run could not measure the figure. */
function medianOf(values: number[]): number {
  return values.some((v) => v === null || !Number.isFinite(v)) ? NaN : median(values);
}

/** The median of the repeats in bold, then every run's value, in run order. */
function spread(values: number[], fmt: (x: number | null) => string): string {
  if (values.length === 1) return `**${fmt(values[0])}**`;
  return `**${fmt(medianOf(values))}** (runs: ${values.map(fmt).join(', ')})`;
}

/** The median of one figure over the repeats. */
function mid<T>(runs: T[], pick: (r: T) => number): number {
  return medianOf(runs.map(pick));
}

/** A row whose figure is judged against a bound on the median of its runs. */
function judged(
  id: string,
  figure: string,
  values: number[],
  fmt: (x: number | null) => string,
  bound: { atLeast: number } | { atMost: number },
  detail = '',
): FigureRow {
  const m = medianOf(values);
  // A bound as the issues write it: 0.8×, 150 ms.
  const plain = (x: number) => fmt(x).replace(/\.?0+(?=\D*$)/, '');
  const [target, met] =
    'atLeast' in bound
      ? [`≥ ${plain(bound.atLeast)}`, m >= bound.atLeast]
      : [`≤ ${plain(bound.atMost)}`, m <= bound.atMost];
  const bounded = 'atLeast' in bound ? bound.atLeast : bound.atMost;
  const ratio = fmt === times ? { values, bound: bounded } : undefined;
  return { id, figure, measured: `${detail}${spread(values, fmt)}`, target, met, ratio };
}

export function figureRows(run: BenchRun): FigureRow[] {
  const { shared } = run;
  const sl = run.sharedLoads;
  const at = (rows: (f: SettingsFigures) => FigureRow[]) => besideOtherSettings(run, rows);
  return [
    ...at(hotRows),
    ...at(tailRows),
    ...at(noisyRows),
    judged('2m', `shared mode: load p50 one at a time (${sl.loads} loads)`, [sl.alone.p50], ms, { atMost: 5 }),
    judged(
      '2n',
      `shared mode: load p50 with 8 in flight (${sl.loads} loads; p99 ${ms(sl.inFlight8.p99)})`,
      [sl.inFlight8.p50],
      ms,
      { atMost: 15 },
    ),
    ...at(planeRows),
    ...at(batchingRows),
    ...run.cold.map((c) =>
      judged(
        '4',
        `cold start, POST /models → 200, p50 of load/unload cycles: ${c.model} (${c.sizeKB.toFixed(0)} KB)`,
        [c.p50Ms],
        ms,
        { atMost: 150 },
        `process start ${ms(c.spawnMs)}, session ${ms(c.sessionMs)}; `,
      ),
    ),
    ...(run.backToBack ? backToBackRows(run.backToBack) : []),
    {
      id: '5',
      figure: `density: tiny models loaded before a ${run.density.budgetMB} MiB budget answers 507; PSS per loaded model`,
      measured: `**${run.density.modelsLoaded} models**, ${run.density.perModelMB.toFixed(1)} MB each`,
    },
    ...run.sim
      .filter((r) => r.trace === 'zipf')
      .map((r) => ({
        id: '6',
        figure: `cache simulator, Zipf trace, 2 GiB: ${r.policy}`,
        measured: `hit ratio ${pct(r.result.hits / r.result.requests)}, load time ${(r.result.loadMicros / 6e7).toFixed(0)} min`,
      })),
    ...run.live.map((l) => ({
      id: '6',
      figure: `cache live: Zipf over ${l.models} models, ${l.room}, ${l.requests} invokes, ${l.policy}`,
      measured: `ModelCacheHit ${pct(l.hitRatio)}, p50 ${ms(l.p50Ms)}, p99 ${ms(l.p99Ms)}, ${l.evictions} evictions`,
    })),
    judged(
      '7',
      `shared hosts: ${shared[0].models} distinct tiny models loaded through POST /models into ${shared[0].hosts} hosts: PSS of the whole server`,
      shared.map((s) => s.serverPssMB),
      mb,
      { atMost: 1536 },
    ),
    judged(
      '7b',
      'shared hosts: cold load (POST /models → 200, no spare process), p50',
      shared.map((s) => s.coldP50Ms),
      ms,
      { atMost: 20 },
    ),
    judged(
      '7c',
      `shared hosts: random-model traffic over the ${shared[0].models} models, 16 connections, over one dedicated model (1 worker) in the same server (req/s)`,
      shared.map((s) => s.ratio),
      times,
      { atLeast: 0.7 },
      `${whole(mid(shared, (s) => s.randomRps))} vs ${whole(mid(shared, (s) => s.dedicatedRps))} req/s = `,
    ),
    ...run.liveModes.map((l) => ({
      id: '7d',
      figure: `cache live: Zipf over ${l.models} models, ${l.room} budget, ${l.requests} invokes, ${l.workerMode}`,
      measured: `ModelCacheHit **${pct(l.hitRatio)}**, p50 ${ms(l.p50Ms)}, p99 ${ms(l.p99Ms)}, ${l.loaded} loaded at the end, ${l.evictions} evictions`,
    })),
    ...(run.modelCount ? modelCountRows(run.modelCount) : []),
    {
      id: '7e',
      figure: `shared hosts as the planner prices them: PSS of a host with one tiny model; what each of ${run.sharedFootprint.models} more adds`,
      measured: `**${run.sharedFootprint.hostMiB.toFixed(1)} MiB** a host (${run.sharedFootprint.hosts} hosts); **${run.sharedFootprint.sessionMiB.toFixed(3)} MiB** a model`,
    },
    {
      id: '8',
      figure: `streaming: example text-generator, ${run.streaming.tokens} tokens, one request at a time, p50`,
      measured: `first chunk **${ms(run.streaming.firstChunkMs)}**, whole response ${ms(run.streaming.totalMs)}`,
    },
    ...at(grpcRows),
    ...(run.grpcH2load ? h2loadRows(run.grpcH2load) : []),
    ...(run.autoscalePairs ?? []).map((a, i) =>
      judged(
        `12${'abc'[i] ?? ''}`,
        `autoscale never slower: ${a.model}, 1..4 workers, 16 connections, the defaults (autoscale on) over autoscale=off, interleaved pairs (req/s)`,
        a.pairs.map((p) => p.ratio),
        times,
        { atLeast: 0.95 },
        `workers at the end ${a.pairs.map((p) => p.on.workers).join(', ')}; `,
      ),
    ),
    ...run.preload.map((p) => ({
      id: '10',
      figure: `preload_model memory, 4 workers, ${p.model} (${p.weightsMB.toFixed(0)} MB weights)`,
      measured: `${p.onMB.toFixed(0)} MB on vs ${p.offMB.toFixed(0)} MB off`,
    })),
    ...at(connectionsRows),
  ];
}

/** How a row at other settings is named: its tuned row's id with a suffix, and what differs. */
const kOtherSettingsRows: Record<OtherSettings, { suffix: string; what: string }> = {
  defaults: { suffix: '·def', what: 'with the shipped defaults (nothing set; loads name only the model and its url)' },
  sagemaker: {
    suffix: '·sm',
    what: 'as the image runs on SageMaker (its config.properties, SAGEMAKER_MULTI_MODEL=true; loads name only the model and its url)',
  },
};

/** Each tuned row, then the same figure at each other settings the run measured (one run each). */
function besideOtherSettings(run: BenchRun, rows: (f: SettingsFigures) => FigureRow[]): FigureRow[] {
  const others = kOtherSettings.flatMap((s) => {
    const figures = run.settings?.[s];
    return figures ? [{ ...kOtherSettingsRows[s], rows: rows(figures) }] : [];
  });
  return rows(run).flatMap((row) => [
    row,
    ...others.flatMap((o) =>
      o.rows
        .filter((r) => r.id === row.id)
        .map((r) => ({ ...r, id: `${row.id}${o.suffix}`, figure: `row ${row.id} ${o.what}` })),
    ),
  ]);
}

/** The hot path (hot-path.ts). */
function hotRows({ hot }: SettingsFigures): FigureRow[] {
  return [
    judged(
      '1',
      'hot path: tiny MLP 16→32→4, 16 connections, 1 worker, over the in-process node:http + onnxruntime server (req/s)',
      hot.map((h) => h.throughputRatio),
      times,
      { atLeast: 0.8 },
      `${whole(mid(hot, (h) => h.ours.rps))} vs ${whole(mid(hot, (h) => h.baseline.rps))} req/s = `,
    ),
    judged(
      '1b',
      'the same: server + worker CPU per request over the in-process server’s (from /proc)',
      hot.map((h) => h.oursCpuMicros / h.baselineCpuMicros),
      times,
      { atMost: 1.6 },
      `${whole(mid(hot, (h) => h.oursCpuMicros))} vs ${whole(mid(hot, (h) => h.baselineCpuMicros))} µs = `,
    ),
    judged(
      '2',
      'latency at concurrency 1, tiny MLP: p50 over the in-process server’s (p50 ours / in-process / raw session.run)',
      hot.map((h) => h.latencyOurs.p50 - h.latencyBaseline.p50),
      ms,
      { atMost: 0.2 },
      `${ms(mid(hot, (h) => h.latencyOurs.p50))} / ${ms(mid(hot, (h) => h.latencyBaseline.p50))} / ${ms(mid(hot, (h) => h.rawRun.p50))}; `,
    ),
    judged(
      '2b',
      'p99 at concurrency 1, tiny MLP, ours (in-process server’s beside it)',
      hot.map((h) => h.latencyOurs.p99),
      ms,
      { atMost: 0.6 },
      `in-process ${ms(mid(hot, (h) => h.latencyBaseline.p99))}; ours `,
    ),
  ];
}

/** The tail at concurrency 1 (tail.ts). */
function tailRows({ tail }: SettingsFigures): FigureRow[] {
  return [
    {
      id: '2g',
      figure: `tail at concurrency 1, tiny MLP, ${tail[0].requests} requests a run interleaved with the in-process server: p50 / p99 / p99.9 dedicated; shared; in-process (medians of the runs)`,
      measured: (['dedicated', 'shared', 'inProcess'] as const)
        .map((k) => ['p50', 'p99', 'p999'].map((p) => ms(mid(tail, (t) => t[k][p as 'p50']))).join(' / '))
        .join('; '),
    },
    judged(
      '2h',
      'c=1 p99 over the in-process p99',
      tail.map((t) => t.p99Ratio),
      times,
      { atMost: 1.5 },
    ),
    judged(
      '2i',
      'c=1 p99.9 over the in-process p99.9',
      tail.map((t) => t.p999Ratio),
      times,
      { atMost: 2 },
    ),
    judged(
      '2j',
      'c=1 p50 over the in-process p50',
      tail.map((t) => t.p50OverheadMs),
      ms,
      { atMost: 0.15 },
    ),
  ];
}

/** The noisy neighbour (noisy-neighbour.ts). */
function noisyRows({ noisy }: SettingsFigures): FigureRow[] {
  return [
    judged(
      '2k',
      'noisy neighbour: six tiny models at c=1 in turn beside a slow model on 4 connections, tiny req/s shared over dedicated',
      noisy.map((n) => n.rpsRatio),
      times,
      { atLeast: 0.8 },
      `${whole(mid(noisy, (n) => n.shared.tinyRps))} vs ${whole(mid(noisy, (n) => n.dedicated.tinyRps))} req/s = `,
    ),
    judged(
      '2l',
      'noisy neighbour: shared tiny p99 over dedicated tiny p99',
      noisy.map((n) => n.p99Ratio),
      times,
      { atMost: 2 },
    ),
  ];
}

/** Image-sized bodies (data-plane.ts). */
function planeRows({ plane }: SettingsFigures): FigureRow[] {
  return [
    judged(
      '2c',
      `image-sized request [1,3,224,224] float32 as JSON (${(plane[0].jsonBytes / 2 ** 20).toFixed(2)} MiB), 4 connections, over the in-process server (req/s)`,
      plane.map((p) => p.json.ratio),
      times,
      { atLeast: 0.95 },
      `${whole(mid(plane, (p) => p.json.ours.rps))} vs ${whole(mid(plane, (p) => p.json.baseline.rps))} req/s = `,
    ),
    judged(
      '2d',
      `the same as .npy (${(plane[0].npyBytes / 2 ** 10).toFixed(0)} KiB), 4 connections, over the in-process server (req/s)`,
      plane.map((p) => p.npy.ratio),
      times,
      { atLeast: 0.8 },
      `${whole(mid(plane, (p) => p.npy.ours.rps))} vs ${whole(mid(plane, (p) => p.npy.baseline.rps))} req/s = `,
    ),
    // Runs before OIP v2 binary was measured (latest.json of older commits) have no row for it.
    ...(plane.every((p) => p.oip)
      ? [
          judged(
            '2p',
            `the same as OIP v2 binary to /v2/models/image/infer (${(plane[0].oipBytes / 2 ** 10).toFixed(0)} KiB), 4 connections, over the in-process server (req/s)`,
            plane.map((p) => p.oip.ratio),
            times,
            { atLeast: 0.8 },
            `${whole(mid(plane, (p) => p.oip.ours.rps))} vs ${whole(mid(plane, (p) => p.oip.baseline.rps))} req/s = `,
          ),
        ]
      : []),
    judged(
      '2e',
      'server event-loop delay p99 under the JSON image load',
      plane.map((p) => p.eventLoopDelayP99Ms),
      ms,
      { atMost: 2 },
    ),
    judged(
      '2f',
      `slow model (${plane[0].slowRunMs} ms a request), 8 requests in one frame: the first one’s wait for its answer over its run time, p99`,
      plane.map((p) => p.coalescedFirstAnswerRatio),
      times,
      { atMost: 1.2 },
    ),
  ];
}

/** Dynamic batching (batching.ts). */
function batchingRows({ batching }: SettingsFigures): FigureRow[] {
  return [
    judged(
      '3',
      'batching: MLP 512→4096→512, 32 connections, batch_size 16 over 1 (req/s)',
      batching.map((b) => b.ratio),
      times,
      { atLeast: 2.5 },
      `${whole(mid(batching, (b) => b.rps16))} vs ${whole(mid(batching, (b) => b.rps1))} req/s = `,
    ),
    // Runs before part 28 had no in-process batcher to compare with.
    ...(batching.every((b) => b.inProcessRatio !== undefined)
      ? [
          judged(
            '3b',
            'batching at its limit: batch_size 16 (max_batch_delay 5 ms) over the in-process server batching the same requests the same way (same batch size and delay, one session.run a batch), interleaved (req/s)',
            batching.map((b) => b.inProcessRatio!),
            times,
            { atLeast: 0.9 },
            `${whole(mid(batching, (b) => b.rps16))} vs ${whole(mid(batching, (b) => b.inProcessRps!))} req/s = `,
          ),
        ]
      : []),
  ];
}

/** gRPC against HTTP (grpc.ts). */
function grpcRows({ grpc }: SettingsFigures): FigureRow[] {
  return [
    judged(
      '9',
      'gRPC ModelInfer (raw contents) over HTTP JSON invoke: tiny MLP, 16 in flight, 1 worker (req/s)',
      grpc.map((g) => g.ratio),
      times,
      { atLeast: 1 },
      `${whole(mid(grpc, (g) => g.grpcRawRps))} vs ${whole(mid(grpc, (g) => g.httpJsonRps))} req/s = `,
    ),
    judged(
      '9b',
      'gRPC raw ModelInfer over HTTP JSON: server + workers CPU per request at full speed',
      grpc.map((g) => g.cpuRatio),
      times,
      { atMost: 1 },
      `${whole(mid(grpc, (g) => g.grpcRawCpuMicros))} vs ${whole(mid(grpc, (g) => g.httpJsonCpuMicros))} µs = `,
    ),
    judged(
      '9c',
      `the same at one offered rate for both (${grpc.map((g) => g.pacedRate).join(', ')} req/s)`,
      grpc.map((g) => g.pacedCpuRatio),
      times,
      { atMost: 1.1 },
      `${whole(mid(grpc, (g) => g.pacedGrpcRawCpuMicros))} vs ${whole(mid(grpc, (g) => g.pacedHttpJsonCpuMicros))} µs = `,
    ),
    {
      id: '9d',
      figure: `gRPC StreamPredictions vs HTTP chunked: text-generator, ${grpc[0].tokens} tokens, first message p50`,
      measured: `**${ms(mid(grpc, (g) => g.grpcFirstMessageMs))}** vs ${ms(mid(grpc, (g) => g.httpFirstChunkMs))}`,
    },
  ];
}

/** gRPC against HTTP with one C client for both (grpc-h2load.ts), the shipped defaults. */
function h2loadRows(h: NonNullable<BenchRun['grpcH2load']>): FigureRow[] {
  const what =
    'gRPC raw ModelInfer over HTTP JSON invoke, one C client for both (h2load; h2c 1 connection × 16 streams, HTTP/1.1 16 connections), tiny MLP, the shipped defaults';
  if ('skipped' in h) return [{ id: '9e', figure: `${what} (req/s)`, measured: `not run: ${h.skipped}` }];
  return [
    judged(
      '9e',
      `${what} (req/s)`,
      h.pairs.map((p) => p.rpsRatio),
      times,
      { atLeast: 1 },
      `${whole(mid(h.pairs, (p) => p.grpc.rps))} vs ${whole(mid(h.pairs, (p) => p.http.rps))} req/s = `,
    ),
    judged(
      '9f',
      `the same: server + workers CPU per request`,
      h.pairs.map((p) => p.cpuRatio),
      times,
      { atMost: 1.1 },
      `${whole(mid(h.pairs, (p) => p.grpc.cpuMicros))} vs ${whole(mid(h.pairs, (p) => p.http.cpuMicros))} µs = `,
    ),
  ];
}

/** Shared models loaded to the last checkpoint (model-count.ts), as SageMaker runs them, nothing else set. */
function modelCountRows(m: NonNullable<BenchRun['modelCount']>): FigureRow[] {
  const last = m.checkpoints.at(-1);
  if (!last) return [];
  const what = `${last.models} tiny models loaded through POST /models into shared hosts, 8 in flight, SAGEMAKER_MULTI_MODEL=true and nothing else set${m.stoppedEarly ? ` (${m.stoppedEarly})` : ''}`;
  return [
    judged('7f', `${what}: PSS of the whole tree`, [last.memory.treePssMB], mb, { atMost: 8192 }),
    judged(
      '7g',
      `the same: load p50 over the last loads before ${last.models} (p99 ${ms(last.loads.p99)})`,
      [last.loads.p50],
      ms,
      { atMost: 20 },
    ),
  ];
}

/** By the number of connections (connections.ts). */
function connectionsRows({ connections }: SettingsFigures): FigureRow[] {
  return [
    {
      id: '11',
      figure: 'tiny MLP, ours over the in-process server by connections (req/s; chart: connections.svg)',
      measured: [...new Set(connections.map((p) => p.connections))]
        .map((c) => {
          const at = (server: string) => connections.find((p) => p.connections === c && p.server === server)!.rps;
          return `${c}: ${times(at('ours') / at('in-process'))}`;
        })
        .join(', '),
    },
  ];
}

/** Back-to-back loads (loads/back-to-back.ts): each load, and the slowest against a fresh process's floor. */
function backToBackRows(b: NonNullable<BenchRun['backToBack']>): FigureRow[] {
  const what = `back-to-back loads: ${b.cycles} load/unload cycles of the tiny MLP with no pause (spare_workers=1)`;
  return [
    judged(
      '4b',
      `${what}, p50 of the loads`,
      [b.p50Ms],
      ms,
      { atMost: 30 },
      `loads ${b.loadMs.map(Math.round).join(', ')} ms; `,
    ),
    judged(
      '4c',
      `${what}: the slowest load over a fresh node + onnxruntime session (the floor, same run)`,
      [b.slowestOverFloor],
      times,
      { atMost: 1.3 },
      `${ms(b.slowestMs)} vs ${ms(b.floorMs)} = `,
    ),
  ];
}

/** The table with each figure's target and whether it is met, or (for docs/) the figures alone. */
export function renderFigureTable(rows: readonly FigureRow[], { targets = true } = {}): string {
  if (!targets)
    return [
      '| # | figure | measured |',
      '|---|---|---|',
      ...rows.map((r) => `| ${r.id} | ${r.figure} | ${r.measured} |`),
    ].join('\n');
  const check = (r: FigureRow) => (r.target === undefined ? '—' : `${r.target} ${r.met ? '✅' : '❌'}`);
  return [
    '| # | figure | measured | target |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.id} | ${r.figure} | ${r.measured} | ${check(r)} |`),
  ].join('\n');
}

/** Where and when: the line above every table of a run. */
export function renderProvenance(run: BenchRun): string {
  const m = run.machine;
  return [
    `\`${run.command}\` at commit ${run.commit}, started ${run.started}, ${(run.seconds / 60).toFixed(1)} min;`,
    `${m.cpu} × ${m.cpus}, ${m.memoryGiB} GiB, Node ${m.node}, onnxruntime-node ${m.onnxruntime};`,
    `load average ${run.loadAverage.start.toFixed(1)} at the start, ${run.loadAverage.end.toFixed(1)} at the end.`,
    `Each ratio is the median of ${run.repeats} runs of its bench${run.quick ? ' (BENCH_QUICK: short runs that check the harness, not figures to quote)' : ''}.`,
    ...(run.settings
      ? [
          'Rows without a suffix run the tuned settings (default_workers_per_model=1, initial_workers 1 on every load);',
          'each ·def row is its row with the shipped defaults, each ·sm row as the image runs on SageMaker, one run each.',
        ]
      : []),
  ].join(' ');
}
