/**
 * The committed output of `npm run bench`: bench-results/latest.json, its shape, and where the
 * files generated from it live. Every figure the README and docs/ quote is read from this file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { SimRow } from '../../cache-sim/main';
import type { BatchingResult } from '../hot-path/batching';
import type { OtherSettings } from '../kit/bench-settings';
import type { BackToBackResult } from '../loads/back-to-back';
import type { CacheLive } from '../cache/cache-live';
import type { ColdStart } from '../loads/cold-start';
import type { ConnectionsPoint } from '../hot-path/connections';
import type { DataPlaneResult } from '../data-plane/data-plane';
import type { Density } from '../memory/density';
import type { GrpcBenchResult } from '../data-plane/grpc';
import type { H2loadResult } from '../data-plane/grpc-h2load';
import type { ModelCountResult } from '../model-count/model-count';
import type { HotPathResult } from '../hot-path/hot-path';
import type { NoisyNeighbourResult } from '../workers/noisy-neighbour';
import type { AutoscalePairSet } from '../workers/autoscale-pairs';
import type { benchPreloadMemory } from '../memory/preload-memory';
import type { SharedFootprint } from '../memory/shared-footprint';
import type { SharedHosts } from '../workers/shared-hosts';
import type { SharedLoadsResult } from '../loads/shared-loads';
import type { StreamingResult } from '../data-plane/streaming';
import type { TailResult } from '../hot-path/tail';
import { kRepoRoot } from '../../../harness/repo-root';

export const ROOT = kRepoRoot;
export const RESULTS_DIR = path.join(ROOT, 'bench-results');
export const LATEST_JSON = path.join(RESULTS_DIR, 'latest.json');
export const LATEST_MD = path.join(RESULTS_DIR, 'latest.md');

/** The cache simulator's hit ratio at one room, for the chart against room. */
export interface SimRoomPoint {
  trace: string;
  policy: string;
  roomGiB: number;
  hitRatio: number;
}

export interface BenchRun {
  /** The command that wrote this file. */
  command: string;
  quick: boolean;
  /** `git describe --always --dirty` of the tree the run measured. */
  commit: string;
  started: string;
  seconds: number;
  machine: { cpu: string; cpus: number; memoryGiB: number; node: string; onnxruntime: string };
  /** One-minute load average at the start and the end of the run. */
  loadAverage: { start: number; end: number };
  /** Each part of the run: how long it took, and the load average when it started. */
  sections: Array<{ name: string; seconds: number; loadAverage: number }>;
  /** How many times each ratio's bench ran (its figures are arrays of that length). */
  repeats: number;
  hot: HotPathResult[];
  tail: TailResult[];
  noisy: NoisyNeighbourResult[];
  plane: DataPlaneResult[];
  batching: BatchingResult[];
  shared: SharedHosts[];
  grpc: GrpcBenchResult[];
  /** gRPC against HTTP with one C client for both; `skipped` where h2load is not installed. Absent from earlier runs. */
  grpcH2load?: H2loadResult | { skipped: string };
  /** Absent from runs before part 28. */
  autoscalePairs?: AutoscalePairSet[];
  connections: ConnectionsPoint[];
  sharedLoads: SharedLoadsResult;
  cold: ColdStart[];
  /** Absent from runs before part 28. */
  backToBack?: BackToBackResult;
  density: Density;
  sharedFootprint: SharedFootprint;
  sim: SimRow[];
  simRoom: SimRoomPoint[];
  live: CacheLive[];
  liveModes: CacheLive[];
  preload: Awaited<ReturnType<typeof benchPreloadMemory>>;
  streaming: StreamingResult;
  /** Shared models loaded to 100 000 with the defaults (the loads alone). Absent from earlier runs. */
  modelCount?: ModelCountResult;
  /**
   * The throughput and latency benches again with the shipped defaults and as the image runs on
   * SageMaker (kit/bench-settings.ts), one run each; absent from runs before part 28.
   */
  settings?: Partial<Record<OtherSettings, SettingsFigures>>;
}

/** The figures every settings of the server is measured for: each array one run long at other settings. */
export type SettingsFigures = Pick<BenchRun, 'hot' | 'tail' | 'connections' | 'noisy' | 'plane' | 'batching' | 'grpc'>;

export function readRun(file = LATEST_JSON): BenchRun {
  return JSON.parse(fs.readFileSync(file, 'utf8')) as BenchRun;
}
