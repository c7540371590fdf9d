/**
 * Every constant the sizing planner assumes, in one place, printed with each plan and quoted in the
 * README. Both worker modes are measured (`npm run bench`: density and cold start for dedicated
 * workers, figure 7 and the host's own figures for shared hosts).
 */
import { keySpec } from '../../src/config/keys';
import { TRACE_SHAPE } from '../cache-sim/traces';

export const MiB = 1024 * 1024;

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
  /** PSS of one loaded tiny model's worker process when hundreds are loaded (bench density: 17.6 MB). */
  dedicatedProcessMiB: 17.6,
  /** Cold load of a tiny model without a spare worker (bench cold start, spare_workers=0, p50). */
  dedicatedColdLoadMs: 157,
  /** Cold load into a running shared host (bench figure 7b, p50). */
  sharedColdLoadMs: 2.8,
  /** What a tiny model's session adds to its host's PSS (400 tiny models loaded into 2 hosts: 123 KB each). */
  sharedSessionMiB: 0.12,
  /** One shared host with no model (its PSS once started: 44 MB). */
  sharedProcessMiB: 44,
  /** Shared hosts per instance (shared_workers' default is one per CPU; the bench machine has 2). */
  sharedHosts: 2,
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
