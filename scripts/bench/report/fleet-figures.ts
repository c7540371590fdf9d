/**
 * docs/deploy.md's fleet figures ("which router to choose") and the tables of
 * bench-results/part22-fleet/README.md, rendered from the committed raw output of
 * `npm run bench:fleet -- hot` beside that README, so a figure cannot drift from the run it quotes: `node dist/scripts/docs-tables.js` rewrites them, test/docs/tables.test.ts fails when
 * they differ.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AtRate, Measured, RouterKind, RouterRun } from '../fleet/hot';
import { RESULTS_DIR } from './results';

const kFleetDir = path.join(RESULTS_DIR, 'part22-fleet');
export const FLEET_RUNS = {
  /** After the self-managed cache waited for room: the runs docs/deploy.md quotes. */
  f2fa2a1: ['f2fa2a1-1', 'f2fa2a1-2', 'f2fa2a1-3'],
  /** Before it. */
  e539e27: ['e539e27-1', 'e539e27-2', 'e539e27-3'],
};
/** The run docs/deploy.md shows in full. */
const kFullRun = 'f2fa2a1-2';

/** The JSON `npm run bench:fleet -- hot` prints (the fields read here). */
interface FleetHotRun {
  commit: string;
  date: string;
  setup: { clients: number; paces: number[] };
  results: Record<'zipf' | 'hot', Record<RouterKind, RouterRun>>;
}

export function readFleetRun(name: string): FleetHotRun {
  return JSON.parse(fs.readFileSync(path.join(kFleetDir, `${name}.json`), 'utf8')) as FleetHotRun;
}

/** Every stretch of a router's run in order: closed loop, then each open-loop rate. */
const stretches = (r: RouterRun): Measured[] => [r.measured, ...r.paced];
const row = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
const fixed = (x: number, digits = 2) => x.toFixed(digits);
/** To the nearest integer, halves to even: as these tables were first written (Python's round), so they read the same. */
function whole(x: number): number {
  const floor = Math.floor(x);
  const rest = x - floor;
  return rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
}
const percent = (share: number) => whole(share * 100);
const slashed = (xs: Array<string | number>) => xs.join(' / ');

/** "5× 502" per status, or `none`. */
function failures(byStatus: Record<string, number>, none: string): string {
  const parts = Object.entries(byStatus).map(([status, n]) => `${n}× ${status}`);
  return parts.length === 0 ? none : parts.join(', ');
}

/** "0", or "5 (5× 502)": how many failed, and with what. */
const failedCell = (failed: number, byStatus: Record<string, number>) =>
  failed > 0 ? `${failed} (${failures(byStatus, 'none')})` : String(failed);

function fiveXx(r: RouterRun): number {
  return stretches(r)
    .flatMap((s) => Object.entries(s.failures))
    .reduce((sum, [status, n]) => sum + (status.startsWith('5') ? n : 0), 0);
}

/** The busiest instance's CPU over the mean: shares of the whole, so the mean is 1/n (the rounded shares may not sum to 1). */
const busiestCpu = (m: Measured) => Math.max(...m.cpuShare) * m.cpuShare.length;

/** One row per run and router: the figures issue 31 set targets for. */
export function renderFleetTargets(runs: readonly string[] = FLEET_RUNS.f2fa2a1): string {
  const header = [
    "| run | router | (a) hit ratio, points below plain hashing: closed / open 0.8× / open 1.0× | (b) busiest ÷ mean: closed / 0.8× / 1.0× | (b) busiest CPU ÷ mean, closed | (b) p99 ÷ plain hashing's: closed / 0.8× / 1.0× | (b) kill: failed (status) |",
    '|---|---|---|---|---|---|---|',
  ];
  const rows = runs.flatMap((name) => {
    const { zipf, hot } = readFleetRun(name).results;
    const plainZipf = stretches(zipf['consistent-hash']);
    const plainHot = stretches(hot['consistent-hash']);
    return (Object.keys(hot) as RouterKind[]).map((router) => {
      const points = stretches(zipf[router]).map((s, i) => (plainZipf[i].hitRatio - s.hitRatio) * 100);
      const killed = hot[router].killed;
      return row([
        name,
        router,
        slashed(points.map((p) => `${p >= 0 ? '+' : ''}${fixed(p, 1)}`)),
        slashed(stretches(hot[router]).map((s) => fixed(s.busiestOverMean))),
        fixed(busiestCpu(hot[router].measured)),
        slashed(stretches(hot[router]).map((s, i) => fixed(s.p99 / plainHot[i].p99))),
        `${killed?.failed ?? 0} (${failures(killed?.failures ?? {}, 'none')}); other 5xx: ${fiveXx(zipf[router]) + fiveXx(hot[router])}`,
      ]);
    });
  });
  return [...header, ...rows].join('\n');
}

/** Shares, CPU, hit ratio and latency of one stretch, against plain hashing's p99 in the same stretch. */
function stretchCells(s: Measured, plain: Measured): string[] {
  return [
    slashed(s.requestShare.map(percent)),
    slashed(s.cpuShare.map(percent)),
    String(s.busiestOverMean),
    fixed(s.hitRatio * 100, 1),
    `${whole(s.p50)} / ${whole(s.p99)} (${fixed(s.p99 / plain.p99)}×) / ${whole(s.p999)}`,
  ];
}

/** One workload of one run in full: the closed loop (and the kill, in the hot workload), then each open-loop rate. */
export function renderFleetWorkload(name: string, workload: 'zipf' | 'hot'): string {
  const { setup, results } = readFleetRun(name);
  const runs = results[workload];
  const label = workload === 'hot' ? '(b) hot' : '(a) zipf';
  const routers = Object.keys(runs) as RouterKind[];
  const plain = runs['consistent-hash'];
  const closed = [
    `${label}, closed loop (${setup.clients} clients):`,
    '',
    "| router | req/s | requests per instance % | CPU per instance % | busiest ÷ mean | hit ratio % | p50 / p99 (÷ plain hashing's) / p99.9 ms | failed | kill: failed, moved (not the killed one's) of seen |",
    '|---|---|---|---|---|---|---|---|---|',
    ...routers.map((router) => {
      const { measured, killed } = runs[router];
      const kill = killed
        ? `${failedCell(killed.failed, killed.failures)}, ${killed.moved} (${killed.movedNotKilled}) of ${killed.modelsSeenBoth}`
        : '';
      const [requests, ...rest] = stretchCells(measured, plain.measured);
      return row([
        router,
        measured.requestsPerSecond,
        requests,
        ...rest,
        failedCell(measured.failed, measured.failures),
        kill,
      ]);
    }),
  ];
  const open = setup.paces.flatMap((pace, i) => [
    '',
    `${label}, open loop at ${plain.paced[i].rps} req/s (${pace}×):`,
    '',
    "| router | requests per instance % | CPU per instance % | busiest ÷ mean | hit ratio % | p50 / p99 (÷ plain hashing's) / p99.9 ms | failed |",
    '|---|---|---|---|---|---|---|',
    ...routers.map((router) => {
      const s: AtRate = runs[router].paced[i];
      return row([router, ...stretchCells(s, plain.paced[i]), failedCell(s.failed, s.failures)]);
    }),
  ]);
  return [...closed, ...open].join('\n');
}

/** docs/deploy.md's run shown in full: its hot workload. */
export const renderFleetHotRun = (): string =>
  [`One run in full (${kFullRun}), the hot workload:`, '', renderFleetWorkload(kFullRun, 'hot')].join('\n');

/** A run's section of bench-results/part22-fleet/README.md: both workloads, under the run's commit and time. */
export function renderFleetRun(name: string): string {
  const { commit, date } = readFleetRun(name);
  const when = `${date.slice(0, 10)} ${date.slice(11, 16)} UTC`;
  return [
    `## ${name}.json: commit ${commit.slice(0, 7)}, ${when}`,
    '',
    renderFleetWorkload(name, 'zipf'),
    '',
    renderFleetWorkload(name, 'hot'),
  ].join('\n');
}
