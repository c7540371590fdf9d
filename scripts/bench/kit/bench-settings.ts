/**
 * The settings a bench's server runs with, one dimension every throughput and latency row takes:
 * a user runs the defaults, not the one-worker setting the rows were first measured with, so a
 * default that costs speed must show up as a row of its own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { kRepoRoot } from '../../../harness/repo-root';
import { keySpec } from '../../../src/config/keys';
import { UsageError } from '../../cli-flags';

/**
 * - `tuned`: the rows as first measured: `default_workers_per_model=1` (the test base) and
 *   `initial_workers: 1` on every load, so autoscaling has nothing to scale.
 * - `defaults`: nothing set: what `npm start` gives outside SageMaker; loads name only the model and its url.
 * - `sagemaker`: the Docker image on SageMaker: its config.properties, its environment and
 *   `SAGEMAKER_MULTI_MODEL=true`; loads as the platform sends them (model and url).
 */
export const kBenchSettings = ['tuned', 'defaults', 'sagemaker'] as const;
export type BenchSettings = (typeof kBenchSettings)[number];
/** The settings `npm run bench` adds beside each tuned row (once each: see all.ts). */
export type OtherSettings = Exclude<BenchSettings, 'tuned'>;
export const kOtherSettings: readonly OtherSettings[] = ['defaults', 'sagemaker'];

export interface SettingsSpec {
  /** config.properties lines after the test base's (a later line wins). */
  properties: string[];
  env: Record<string, string>;
  /** Fields every POST /models of the bench adds. */
  load: Record<string, unknown>;
}

/** The listeners and the store stay the bench's (loopback, port 0): they are where, not how fast. */
const kWhere = /^\s*(inference_address|management_address|model_store)\s*=/;

/** The image's config.properties without comments and listeners. */
function imageProperties(): string[] {
  const text = fs.readFileSync(path.join(kRepoRoot, 'docker', 'config.properties'), 'utf8');
  return text.split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#') && !kWhere.test(l));
}

export function settingsSpec(settings: BenchSettings): SettingsSpec {
  if (settings === 'tuned') return { properties: [], env: {}, load: { initial_workers: 1 } };
  // The test base sets default_workers_per_model=1; the shipped default undoes it.
  const defaults = [`default_workers_per_model=${keySpec('default_workers_per_model')!.default}`];
  if (settings === 'defaults') return { properties: defaults, env: {}, load: {} };
  return {
    properties: [...defaults, ...imageProperties()],
    // The Dockerfile's ENV, and what SageMaker sets on a Multi-Model Endpoint.
    env: { NODE_ENV: 'production', SAGEMAKER_MULTI_MODEL: 'true' },
    load: {},
  };
}

/** MME_BENCH_SETTINGS, for a bench run on its own (default tuned). */
export function settingsFromEnv(): BenchSettings {
  const named = process.env.MME_BENCH_SETTINGS || 'tuned';
  if (!(kBenchSettings as readonly string[]).includes(named))
    throw new UsageError(
      `MME_BENCH_SETTINGS is "${named.slice(0, 40)}"; use one of ${kBenchSettings.join(', ')} (or leave it unset: tuned)`,
    );
  return named as BenchSettings;
}
