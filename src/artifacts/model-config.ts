import os from 'node:os';
import path from 'node:path';
import { invalidModel, isMmeError, quote } from '../errors';
import { isWorkerMode } from '../config/types';
import { asyncReads, type DirReads } from './dir-reads';
import { errnoOf, fsFailure } from './fs-errors';
import { atLeast, duration, seconds, type Range } from '../config/keys/kinds';

export const MODEL_CONFIG_FILE = 'model-config.json';

/** Per-model settings from an optional `model-config.json` beside the .onnx file; each overrides a server default. */
export interface ModelDirConfig {
  /** Most requests one batch may hold. */
  readonly batchSize?: number;
  /** Milliseconds to wait for a batch to fill. */
  readonly maxBatchDelay?: number;
  readonly minWorkers?: number;
  readonly maxWorkers?: number;
  readonly jobQueueSize?: number;
  /** Seconds. */
  readonly responseTimeout?: number;
  /** Seconds. */
  readonly loadTimeout?: number;
  readonly useJobTicket?: boolean;
  /** One process holds the session for all of the model's workers (see preload_model). */
  readonly preloadModel?: boolean;
  readonly deviceIds?: readonly number[];
  /** Handler module path, relative to the model directory. */
  readonly handler?: string;
  /** Where the model runs; "dedicated" here is final (a model that must not share a process). */
  readonly workerMode?: 'dedicated' | 'shared';
  /** MB its worker processes may use together (memory_limit_mb): the kernel stops them past it. */
  readonly memoryLimitMb?: number;
  /** Cores its worker processes may use together (cpu_limit, fractional). */
  readonly cpuLimit?: number;
  /** Never evicted by the cache (pinned). */
  readonly pinned?: boolean;
  /** Its eviction class (eviction_priority). */
  readonly evictionPriority?: 'low' | 'normal' | 'high';
  /** Seconds without a request before it is unloaded (idle_unload_seconds); 0 = never. */
  readonly idleUnloadSeconds?: number;
}

// A config file is a few hundred bytes; the cap only stops a huge file from being read into memory.
const MAX_CONFIG_BYTES = 64 * 1024;

/** Returns what the value must be when it is invalid, else null. */
type Check = (value: unknown) => string | null;

/** An integer in the range a config key of the same meaning allows (durations: no longer than a timer holds). */
const integer =
  (range: Range): Check =>
  (v) =>
    Number.isSafeInteger(v) && range.allows(v as number) ? null : `an integer ${range.text}`;
export const boolean: Check = (v) => (typeof v === 'boolean' ? null : 'true or false');

/** The rule for a handler path, wherever it is named: relative, no '..' component, no NUL. */
export function isSafeRelativePath(p: string): boolean {
  return p.length > 0 && !p.includes('\0') && !path.isAbsolute(p) && !p.split(/[\\/]/).includes('..');
}

/**
 * The least memory_limit_mb: a warm worker (Node and onnxruntime, before any model) takes 40-60 MB,
 * so under 64 MB every worker would be stopped before its model loaded.
 */
export const kMinMemoryLimitMb = 64;

/** What each field must be: the management API holds its fields of the same name to the same rules. */
export const kChecks: Record<keyof ModelDirConfig, Check> = {
  batchSize: integer(atLeast(1)),
  maxBatchDelay: integer(duration(0, 1, 'ms')),
  minWorkers: integer(atLeast(0)),
  maxWorkers: integer(atLeast(1)),
  jobQueueSize: integer(atLeast(1)),
  responseTimeout: integer(seconds(1)),
  loadTimeout: integer(seconds(1)),
  useJobTicket: boolean,
  preloadModel: boolean,
  deviceIds: (v) =>
    Array.isArray(v) && v.every((d) => Number.isSafeInteger(d) && d >= 0) ? null : 'an array of integers >= 0',
  handler: (v) =>
    typeof v === 'string' && isSafeRelativePath(v) ? null : 'a relative path inside the model directory',
  workerMode: (v) => (isWorkerMode(v) ? null : '"dedicated" or "shared"'),
  memoryLimitMb: integer(atLeast(kMinMemoryLimitMb)),
  /**
   * Cores, at least the 1 % a CFS quota can hold (1 ms of each 100 ms period) and at most the
   * machine's cores, past which it would limit nothing.
   */
  cpuLimit: (v) => {
    const cores = os.availableParallelism();
    return typeof v === 'number' && Number.isFinite(v) && v >= 0.01 && v <= cores
      ? null
      : `a number of cores >= 0.01 and <= ${cores} (this machine's cores)`;
  },
  pinned: boolean,
  evictionPriority: (v) => (v === 'low' || v === 'normal' || v === 'high' ? null : '"low", "normal" or "high"'),
  idleUnloadSeconds: integer(seconds(0)),
};

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Validates the parsed JSON. `where` names the file in messages. Unknown keys are errors: a typo must not be ignored. */
export function parseModelConfig(text: string, where: string): ModelDirConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw invalidModel(`${where} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalidModel(`${where} must hold a JSON object`);
  const config: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const check = Object.hasOwn(kChecks, key) ? kChecks[key as keyof ModelDirConfig] : undefined;
    if (!check)
      throw invalidModel(`${where}: unknown field ${quote(key)} (known fields: ${Object.keys(kChecks).join(', ')})`);
    const need = check(value);
    if (need) throw invalidModel(`${where}: "${key}" must be ${need}, got ${preview(value)}`);
    config[key] = Array.isArray(value) ? Object.freeze([...(value as unknown[])]) : value;
  }
  const { minWorkers, maxWorkers } = config as ModelDirConfig;
  if (minWorkers !== undefined && maxWorkers !== undefined && minWorkers > maxWorkers) {
    throw invalidModel(`${where}: "minWorkers" (${minWorkers}) must not exceed "maxWorkers" (${maxWorkers})`);
  }
  return Object.freeze(config);
}

/** Reads `<dir>/model-config.json` ({} when absent) without following a symbolic link. */
export async function readModelConfig(
  dir: string,
  where: string,
  reads: DirReads = asyncReads,
): Promise<ModelDirConfig> {
  let text: string;
  try {
    text = await reads.readNoFollow(path.join(dir, MODEL_CONFIG_FILE), (st) => {
      if (!st.isFile()) throw invalidModel(`${where} is not a regular file`);
      if (st.size > MAX_CONFIG_BYTES) throw invalidModel(`${where} is larger than ${MAX_CONFIG_BYTES / 1024} KiB`);
    });
  } catch (err) {
    if (isMmeError(err)) throw err;
    if (errnoOf(err) === 'ENOENT') return Object.freeze({});
    if (errnoOf(err) === 'ELOOP') throw invalidModel(`${where} is a symbolic link; links are not followed`);
    throw fsFailure(`reading ${where}`, err);
  }
  return parseModelConfig(text, where);
}
