/**
 * docs/workers.md's autoscaling figures, rendered from the committed raw output of
 * `npm run bench:autoscale` in bench-results/part22-autoscale/ (each is a phrase inside a sentence:
 * `node dist/scripts/docs-tables.js` rewrites it, test/docs/tables.test.ts fails when it differs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { median } from '../../../harness/statistics';
import { kCoalesce } from '../../../src/server/models/dispatcher';
import { RESULTS_DIR } from './results';

const kDir = path.join(RESULTS_DIR, 'part22-autoscale');

/** One mode's run of the bench, the fields read here. */
interface ModeRun {
  mode: 'dedicated' | 'shared';
  /** The surge's start, as a share of one worker's capacity: 0.2 (to 0.8×) or 0.3 (to 1.2×); absent in the older runs. */
  baseLoad?: number;
  autoscaleOn?: boolean;
  oneWorkerRps: number;
  hotRps: { before: number; surge: number };
  nextWorkerMs: number | null;
}

function modes(file: string): ModeRun[] {
  return (JSON.parse(fs.readFileSync(path.join(kDir, file), 'utf8')) as { modes: ModeRun[] }).modes;
}

const share = (rps: number, run: ModeRun) => Number((rps / run.oneWorkerRps).toFixed(1));

/**
 * Before the frame bound (87978ea): what a frame of queued requests of the slow model cost its last
 * request, from the model's run time in the 1.2× dedicated runs at 90fe5d4 (1000 ms over what one worker
 * served per second, the median of the runs).
 */
export function renderFrameWait(): string {
  const runs = ['cores-90fe5d4-1.json', 'cores-90fe5d4-2.json'].flatMap((f) =>
    modes(f).filter((m) => m.mode === 'dedicated' && m.baseLoad === 0.3 && m.autoscaleOn),
  );
  const runMs = 1000 / median(runs.map((m) => m.oneWorkerRps));
  return `a frame of ${kCoalesce} requests of ${Math.round(runMs)} ms made the last wait ${Math.round((kCoalesce - 1) * runMs)} ms`;
}

/** Before `autoscale_busy_share` (0254eb6, quiet machine): how late the wait and backlog rules alone added a worker. */
export function renderWithoutBusyShare(): string {
  const run = modes('autoscale-quiet-no-busy1.json').find((m) => m.mode === 'dedicated');
  if (!run?.nextWorkerMs) throw new Error('autoscale-quiet-no-busy1.json has no dedicated run that added a worker');
  return `a slow model whose rate went from ${share(run.hotRps.before, run)}× to ${share(run.hotRps.surge, run)}× of what one worker serves got its second worker ${(run.nextWorkerMs / 1000).toFixed(1)} s after the surge`;
}
