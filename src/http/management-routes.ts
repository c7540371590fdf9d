/**
 * The management API, as SageMaker MME calls it (JSON body) and as MMS accepts it (query string):
 * load, list, describe, scale, unload.
 */
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Context } from 'koa';
import { errorOf, MmeError, quote, quoteValue } from '../errors';
import { nearestName } from '../util/nearest-name';
import { modelNameFromUrl } from '../config/load-models';
import { isWorkerMode, type WorkerMode } from '../config/types';
import { modelNotFound, type LoadRequest, type Model, type ModelManager } from '../gateway/models';
import { boolean, kChecks, type ModelDirConfig } from '../artifacts/model-config';
import { timerLimit } from '../util/timer-limit';
import { closeAfterAnswer, readBody } from './body';

const kMaxManagementBody = 64 * 1024;
const badRequest = errorOf('MME_ERR_BAD_REQUEST');

/** `guard` runs before every management route (the bearer-token check when management_token is set). */
export function mountManagementRoutes(router: Router, manager: ModelManager, guard: Middleware): void {
  router.post('/models', guard, async (ctx) => {
    const req = await loadRequestOf(ctx);
    const outcome = await manager.lifecycle.load(req);
    if (outcome === 'accepted') {
      ctx.status = 202;
      ctx.body = { status: 'Processing worker updates...' };
    } else {
      ctx.body =
        req.minWorkers === 0 ? { status: `Model "${req.modelName}" registered` } : { status: 'Workers scaled' };
    }
  });

  router.get('/models', guard, (ctx) => {
    // MMS clamps limit to 100 (0 or negative means the default: a zero page would never advance) and treats the token as an offset.
    const limit = intParam(ctx, 'limit', 100, -Infinity);
    const pageSize = limit > 100 || limit <= 0 ? 100 : limit;
    const start = Math.max(0, intParam(ctx, 'next_page_token', 0, -Infinity));
    // One page, not the whole sorted list: with 100 000 models a page costs what it does with ten.
    const page = manager.registry.page(start, pageSize);
    // The SageMaker toolkit's tests compare list entries exactly, so memory is opt-in (?memory=true)
    // and only a pinned model's entry, or one that unloads when idle, says so.
    const withMemory = boolParam(ctx, 'memory', false);
    const next = start + pageSize;
    ctx.body = {
      models: page.map((m) => ({
        modelName: m.name,
        modelUrl: m.url,
        ...(withMemory ? { memoryUsage: m.memoryBytes } : {}),
        ...(m.settings.pinned ? { pinned: true as const } : {}),
        ...(m.settings.idleUnloadSeconds > 0 ? { idleUnloadSeconds: m.settings.idleUnloadSeconds } : {}),
      })),
      ...(next < manager.registry.servingCount() ? { nextPageToken: String(next) } : {}),
    };
  });

  router.get('/models/:name', guard, async (ctx) => {
    const model = manager.registry.get(ctx.params.name);
    await model.refreshMemory();
    ctx.body = describe(model, manager.registry.current(model.name)!, manager.workers.limits.mode);
  });

  router.put('/models/:name', guard, async (ctx) => {
    const name = ctx.params.name;
    // A model whose load is in progress is registered (POST answers 409 for it): it is scaled, and answered, once loaded.
    if (!manager.registry.registered(name)) throw modelNotFound(name);
    const min = intParam(ctx, 'min_worker', 1, 0);
    const max = intParam(ctx, 'max_worker', min, 0);
    if (max < min) throw badRequest(`max_worker (${max}) cannot be less than min_worker (${min}).`);
    const synchronous = boolParam(ctx, 'synchronous', false);
    // Awaited either way: a scale the memory budget refuses is 507, not 202.
    await manager.lifecycle.scale(name, min, max, synchronous);
    if (synchronous) {
      ctx.body = { status: 'Workers scaled' };
    } else {
      ctx.status = 202;
      ctx.body = { status: 'Processing worker updates...' };
    }
  });

  router.delete('/models/:name', guard, async (ctx) => {
    await manager.lifecycle.unload(ctx.params.name);
    ctx.body = { status: `Model "${ctx.params.name}" unregistered` };
  });
}

function describe(
  model: Model,
  entry: { loadedAtStartup: boolean; phase: string; lastError: MmeError | null },
  limitsEnforcedBy: string,
) {
  const failed = entry.phase === 'failed';
  const s = model.settings;
  return {
    modelName: model.name,
    modelVersion: '1.0',
    modelUrl: model.url,
    engine: 'onnxruntime',
    runtime: 'node',
    status: failed ? 'FAILED' : 'READY',
    ...(entry.lastError && failed ? { lastError: entry.lastError.message } : {}),
    minWorkers: s.minWorkers,
    maxWorkers: s.maxWorkers,
    // The worker count it runs toward, and (autoscale on) the last decision that set it, with its figures.
    workerTarget: model.workerTarget,
    autoscale: model.autoscaler?.status ?? null,
    batchSize: s.batchSize,
    maxBatchDelay: s.maxBatchDelayMs,
    jobQueueSize: s.jobQueueSize,
    responseTimeout: s.responseTimeoutMs / 1000,
    useJobTicket: s.useJobTicket,
    preloadModel: s.preloadModel,
    workerMode: s.workerMode,
    // Its limits, what holds them, and that its workers are processes of their own whatever worker_mode says.
    limits:
      s.memoryLimitMb === null && s.cpuLimit === null
        ? null
        : { memoryLimitMb: s.memoryLimitMb, cpuLimit: s.cpuLimit, enforcedBy: limitsEnforcedBy, ownProcesses: true },
    pinned: s.pinned,
    evictionPriority: s.evictionPriority,
    idleUnloadSeconds: s.idleUnloadSeconds,
    loadedAtStartup: entry.loadedAtStartup,
    queueLength: model.queueLength,
    memoryUsage: model.memoryBytes,
    inputs: model.inputs,
    outputs: model.outputs,
    // What the model file says about itself (producer, opsets, metadata_props); every worker reads the same file.
    metadata: model.workers.find((w) => w.loaded)?.loaded?.metadata ?? null,
    workers: model.workers.map((w) => ({
      id: w.id,
      pid: w.pid,
      // The shared host holding it (worker_mode=shared), or null for a process of its own.
      host: w.sharedHostId,
      // Its share of that host's thread since its load (0–1), from its runs' measured time; no key for its own process.
      cpuShare: w.host.policy.cpuShare && Math.round(w.host.policy.cpuShare(w) * 1e6) / 1e6,
      startTime: w.startTime.toISOString(),
      status: w.state.toUpperCase(),
      gpu: w.host.policy.gpuId >= 0,
      gpuId: w.host.policy.gpuId,
      memoryUsage: w.memoryBytes,
      executionProvider: w.loaded?.executionProvider ?? null,
      // onnx_graph_optimization_level=auto resolved for this model's graph.
      graphOptimizationLevel: w.loaded?.graphOptimizationLevel ?? null,
      // Cold-start split: process + runtime start, then handler init + session creation.
      startupMicros: w.loaded
        ? { spawn: w.spawnMicros, session: w.loaded.sessionMicros, load: w.loaded.loadMicros }
        : null,
      concurrency: w.capacity,
    })),
  };
}

async function loadRequestOf(ctx: Context): Promise<LoadRequest> {
  const q = ctx.query;
  let fields: Record<string, unknown> = {};
  // Fields come as a JSON body or, as MMS takes them, in the query string with no body. A body of
  // any other type is refused unread: a form or text/plain body is what a page on another site can
  // send without a CORS preflight (docs/security.md).
  const hasBody = (ctx.request.length ?? 0) > 0 || ctx.get('transfer-encoding') !== '';
  if (hasBody && !ctx.is('json')) {
    closeAfterAnswer(ctx.req, ctx.res);
    throw new MmeError(
      'MME_ERR_UNSUPPORTED_MEDIA_TYPE',
      `POST /models takes a JSON body sent with Content-Type: application/json (this one is ${quote(ctx.get('content-type') || 'untyped')}), or its fields in the query string with no body.`,
    );
  }
  if (hasBody) {
    const raw = await readBody(ctx, kMaxManagementBody);
    if (raw.length > 0) {
      try {
        fields = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        throw badRequest('The request body is not valid JSON; send {"model_name": "...", "url": "..."}.');
      }
      if (!fields || typeof fields !== 'object' || Array.isArray(fields))
        throw badRequest('The request body must be a JSON object like {"model_name": "...", "url": "..."}.');
      checkLoadRequestFields(Object.keys(fields));
    }
  }
  const get = (key: string): unknown =>
    fields[key] !== undefined ? fields[key] : typeof q[key] === 'string' ? q[key] : undefined;
  const req: Record<string, unknown> = {};
  for (const [key, [field, read]] of Object.entries(kLoadFields)) req[field] = read(get(key), key, field);
  // MMS derives the name from the archive when model_name is omitted.
  req.modelName ??= typeof req.url === 'string' ? modelNameFromUrl(req.url) : undefined;
  return req as unknown as LoadRequest;
}

/** An unknown field would be dropped in silence ("pinnned": true loads a model unpinned): refused, with a did-you-mean. */
function checkLoadRequestFields(fields: readonly string[]): void {
  const known = Object.keys(kLoadFields);
  const unknown = fields.filter((f) => !known.includes(f));
  if (unknown.length === 0) return;
  const described = unknown.slice(0, 5).map((f) => {
    const meant = nearestName(f, known);
    return `${quote(f)}${meant === null ? '' : ` (did you mean ${meant}?)`}`;
  });
  const more = unknown.length > 5 ? ` and ${unknown.length - 5} more` : '';
  throw new MmeError(
    'MME_ERR_UNKNOWN_FIELD',
    `Unknown field${unknown.length > 1 ? 's' : ''} in the load request: ${described.join(', ')}${more}. The fields are ${known.join(', ')}.`,
  );
}

function optWorkerMode(v: unknown): WorkerMode | undefined {
  if (v === undefined) return undefined;
  if (isWorkerMode(v)) return v;
  throw badRequest(`worker_mode must be "dedicated" or "shared", got ${quoteValue(v)}`);
}

function optString(v: unknown, key: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw badRequest(`${key} must be a string.`);
  return v;
}

/** The durations a load request sets: each is a timer's wait, which cannot be longer than a timer holds. */
const kMillis = timerLimit(1, 'ms');
const kSeconds = timerLimit(1000, 'seconds');

/**
 * A field held to `problem`, which says what it must be; query-string text is read first as the
 * boolean or the number (as `numeral` spells one) it is.
 */
function optChecked<T>(
  v: unknown,
  key: string,
  problem: (v: unknown) => string | null,
  numeral = /^\d+(\.\d+)?$/,
): T | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = v === 'true' || v === 'false' ? v === 'true' : typeof v === 'string' && numeral.test(v) ? Number(v) : v;
  const need = problem(n);
  if (need !== null) throw badRequest(`${key} must be ${need}; got ${quoteValue(v)}.`);
  return n as T;
}

function optInt(v: unknown, key: string, min: number, max?: { max: number; text: string }): number | undefined {
  return optChecked(
    v,
    key,
    (n) =>
      Number.isInteger(n) && (n as number) >= min && (max === undefined || (n as number) <= max.max)
        ? null
        : `an integer >= ${min}${max === undefined ? '' : ` and <= ${max.text}`}`,
    /^-?\d+$/,
  );
}

function optIntList(v: unknown, key: string): number[] | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const list: unknown[] = Array.isArray(v)
    ? v
    : typeof v === 'object'
      ? [Number.NaN]
      : String(v as string | number | boolean)
          .split(',')
          .map((s) => Number(s.trim()));
  if (!list.every((n) => typeof n === 'number' && Number.isInteger(n) && n >= 0))
    throw badRequest(`${key} must be a list of GPU ids (non-negative integers); got ${quoteValue(v)}.`);
  return list as number[];
}

/** How a load request's field is read: `key` is its name on the wire (for messages), `field` its LoadRequest name. */
type Read = (v: unknown, key: string, field: keyof LoadRequest) => unknown;
const int =
  (min: number, max?: { max: number; text: string }): Read =>
  (v, key) =>
    optInt(v, key, min, max);
/** A field model-config.json takes too, held to its rule there: both places take the same values. */
const asInConfig: Read = (v, key, field) => optChecked(v, key, kChecks[field as keyof ModelDirConfig]);

/** The fields of a load request as clients send them (MMS's names), in the body or the query string of POST /models. */
const kLoadFields: Record<string, [keyof LoadRequest, Read]> = {
  model_name: ['modelName', (v) => v],
  url: ['url', (v) => v],
  handler: ['handler', optString],
  batch_size: ['batchSize', int(1)],
  max_batch_delay: ['maxBatchDelay', int(0, kMillis)],
  initial_workers: ['minWorkers', int(0)],
  response_timeout: ['responseTimeout', int(1, kSeconds)],
  load_timeout: ['loadTimeout', int(1, kSeconds)],
  job_queue_size: ['jobQueueSize', int(1)],
  use_job_ticket: ['useJobTicket', asInConfig],
  preload_model: ['preloadModel', asInConfig],
  device_ids: ['deviceIds', optIntList],
  worker_mode: ['workerMode', optWorkerMode],
  synchronous: ['synchronous', (v, key) => optChecked(v, key, boolean)],
  memory_limit_mb: ['memoryLimitMb', asInConfig],
  cpu_limit: ['cpuLimit', asInConfig],
  pinned: ['pinned', asInConfig],
  eviction_priority: ['evictionPriority', asInConfig],
  idle_unload_seconds: ['idleUnloadSeconds', int(0, kSeconds)],
};

function intParam(ctx: Context, key: string, fallback: number, min: number): number {
  return optInt(ctx.query[key], key, min) ?? fallback;
}

function boolParam(ctx: Context, key: string, fallback: boolean): boolean {
  return optChecked<boolean>(ctx.query[key], key, boolean) ?? fallback;
}
