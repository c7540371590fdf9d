/**
 * What model_repository adds to a cold load: its download, at a bandwidth the operator states,
 * on top of the first-request latency measured for a cold model already on disk
 * (`npm run bench:repository` prints both for this machine). Downloads per minute assume every
 * load misses the disk cache: the bound to provision the store's bandwidth for.
 */
import { MiB } from './assumptions';
import type { Prediction } from './planner';
import type { Workload } from './workload';

export interface DownloadOptions {
  /** Bandwidth from the repository, MB/s (10^6 bytes). */
  readonly mbps: number;
  /** Measured first-request latency of a cold model loaded from local disk, ms. */
  readonly coldStartMs: number;
}

export function downloadLines(workload: Workload, rows: readonly Prediction[], opts: DownloadOptions): string[] {
  const sizes = workload.models.map((m) => m.weightsBytes).sort((a, b) => a - b);
  const mean = sizes.reduce((s, b) => s + b, 0) / sizes.length;
  const median = sizes[Math.floor(sizes.length / 2)];
  const largest = sizes[sizes.length - 1];
  const firstRequest = (bytes: number) => `${Math.round(opts.coldStartMs + (bytes / 1e6 / opts.mbps) * 1000)} ms`;
  const mb = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
  return [
    `With model_repository at ${opts.mbps} MB/s and a ${opts.coldStartMs} ms cold start from disk, a cold first request takes about ${firstRequest(median)} for the median model (${mb(median)}) and ${firstRequest(largest)} for the largest (${mb(largest)}).`,
    ...rows.map(
      (p) =>
        `- ${p.mode.name}, ${p.instances} instance${p.instances === 1 ? '' : 's'} (${p.routing}): at most ${((p.loadsPerMinute * mean) / 1e6).toFixed(0)} MB/min from the repository (${p.loadsPerMinute.toFixed(1)} loads/min × ${mb(mean)} mean size)`,
    ),
  ];
}
