/**
 * Every constant the sizing planner assumes, in one place, printed with each plan and in docs/deploy.md
 * (a generated table). Both worker modes are measured: the figures `npm run bench` wrote to
 * bench-results/latest.json (density, cold start, the shared hosts' loads and footprint) are read
 * from it, so the plans and the docs follow the committed run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { median } from '../../harness/statistics';
import { keySpec } from '../../src/config/keys';
import { TRACE_SHAPE } from '../cache-sim/traces';

export const MiB = 1024 * 1024;

/** Compiled to dist/scripts/plan/, so the repository root is three levels up. */
export const BENCH_RESULTS = path.join(__dirname, '..', '..', '..', 'bench-results', 'latest.json');

/** The fields of bench-results/latest.json the planner reads (scripts/bench/report/results.ts has the whole shape). */
interface BenchRun {
  density: { perModelMB: number };
  cold: Array<{ model: string; p50Ms: number }>;
  /** One entry per repeat of the shared-hosts bench. */
  shared: Array<{ coldP50Ms: number }>;
  sharedFootprint: { hostMiB: number; sessionMiB: number; hosts: number };
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;

/** The measured figures, rounded as the planner prints them. */
export function measuredFigures(file = BENCH_RESULTS): {
  processMiB: number;
  coldLoadMs: number;
  sharedColdLoadMs: number;
  sharedSessionMiB: number;
  sharedProcessMiB: number;
  sharedHosts: number;
} {
  const run = JSON.parse(fs.readFileSync(file, 'utf8')) as BenchRun;
  const cold = run.cold.find((c) => /^tiny MLP .*spare_workers=0$/.test(c.model));
  if (!cold) throw new Error(`${file} has no cold start of the tiny MLP with spare_workers=0; rerun npm run bench`);
  if (!Array.isArray(run.shared) || !run.sharedFootprint)
    throw new Error(`${file} predates the shared hosts' repeats and footprint; rerun npm run bench`);
  return {
    processMiB: round1(run.density.perModelMB),
    coldLoadMs: Math.round(cold.p50Ms),
    sharedColdLoadMs: round1(median(run.shared.map((s) => s.coldP50Ms))),
    sharedSessionMiB: round2(run.sharedFootprint.sessionMiB),
    sharedProcessMiB: Math.round(run.sharedFootprint.hostMiB),
    sharedHosts: run.sharedFootprint.hosts,
  };
}

const measured = measuredFigures();

export interface WorkerMode {
  readonly name: 'dedicated' | 'shared';
  /** Memory a loaded model takes, given its .onnx size. */
  footprintBytes(weightsBytes: number): number;
  /** How long an invoke of an unloaded model waits for the load. */
  coldLoadMicros(weightsBytes: number): number;
  /** Memory this mode takes per instance whatever is loaded. */
  readonly fixedBytes: number;
  /** How the figures above were obtained, for the printed assumptions. */
  readonly basis: string;
}

export const ASSUMPTIONS = {
  /** PSS of one loaded tiny model's worker process with a 2 GiB budget full of them (bench density, figure 5). */
  dedicatedProcessMiB: measured.processMiB,
  /** Cold load of a tiny model without a spare worker (bench cold start, spare_workers=0, p50). */
  dedicatedColdLoadMs: measured.coldLoadMs,
  /** Cold load into a running shared host (bench figure 7b, p50, the median of its runs). */
  sharedColdLoadMs: measured.sharedColdLoadMs,
  /** What a tiny model's session adds to its hosts' PSS (bench figure 7e: a few hundred tiny models). */
  sharedSessionMiB: measured.sharedSessionMiB,
  /** One shared host holding one tiny model (bench figure 7e). */
  sharedProcessMiB: measured.sharedProcessMiB,
  /** Shared hosts per instance (shared_workers' default is one per CPU; as many as the bench machine started). */
  sharedHosts: measured.sharedHosts,
  /** Resident weight bytes per .onnx byte: onnxruntime keeps initializers about as large as the file. */
  weightsFactor: 1,
  /** Session creation and reading the file grow with size (the cache simulator's own assumption). */
  loadMsPerMiB: TRACE_SHAPE.loadMsPerMiB,
  /** Kept for the server process when the budget is derived from the instance memory. */
  reserveMiB: Number(keySpec('model_memory_reserve_mb')!.default),
  /** The eviction policy simulated: the server's default. */
  policy: keySpec('eviction_policy')!.default as 'gdsf' | 'lru',
} as const;

const a = ASSUMPTIONS;
const loadMs = (weightsBytes: number) => a.loadMsPerMiB * (weightsBytes / MiB);

export const DEDICATED: WorkerMode = {
  name: 'dedicated',
  footprintBytes: (w) => a.dedicatedProcessMiB * MiB + a.weightsFactor * w,
  coldLoadMicros: (w) => (a.dedicatedColdLoadMs + loadMs(w)) * 1000,
  fixedBytes: 0,
  basis: `one worker process per model: ${a.dedicatedProcessMiB} MiB + weights; cold load ${a.dedicatedColdLoadMs} ms + ${a.loadMsPerMiB} ms/MiB (process and session cost measured by npm run bench; the per-MiB rate is the cache simulator's)`,
};

export const SHARED: WorkerMode = {
  name: 'shared',
  footprintBytes: (w) => a.sharedSessionMiB * MiB + a.weightsFactor * w,
  coldLoadMicros: (w) => (a.sharedColdLoadMs + loadMs(w)) * 1000,
  fixedBytes: a.sharedHosts * a.sharedProcessMiB * MiB,
  basis: `sessions in ${a.sharedHosts} shared hosts (${a.sharedProcessMiB} MiB each): ${a.sharedSessionMiB} MiB + weights; cold load ${a.sharedColdLoadMs} ms + ${a.loadMsPerMiB} ms/MiB (measured by npm run bench, figure 7; the per-MiB rate is the cache simulator's)`,
};

export const MODES: readonly WorkerMode[] = [DEDICATED, SHARED];

/** docs/deploy.md's assumptions table (node dist/scripts/docs-tables.js writes it). */
export function renderAssumptionsMarkdown(): string {
  return [
    '| | dedicated workers | shared workers |',
    '|---|---|---|',
    `| memory per loaded model | ${a.dedicatedProcessMiB} MiB (measured PSS of one tiny model's process, bench "density") + weights | ${a.sharedSessionMiB} MiB per session (measured growth of the hosts' PSS over tiny models, bench figure 7e) + weights, plus ${a.sharedHosts} hosts of ${a.sharedProcessMiB} MiB per instance (measured, figure 7e) |`,
    `| cold load | ${a.dedicatedColdLoadMs} ms (measured, \`spare_workers=0\`) + ${a.loadMsPerMiB} ms per MiB | ${a.sharedColdLoadMs} ms (measured, bench figure 7b) + ${a.loadMsPerMiB} ms per MiB |`,
    `| both | weights resident ≈ the \`.onnx\` size; ${a.reserveMiB} MiB per instance kept for the server (\`model_memory_reserve_mb\`); eviction by ${a.policy.toUpperCase()}, the default | |`,
  ].join('\n');
}
