/**
 * A model's effective settings: the load request first, then its model-config.json, then
 * config.properties (MMS's order), and the handler module it runs.
 */
import path from 'node:path';
import type { ModelArtifact } from '../../artifacts/model-artifact';
import type { ModelDirConfig } from '../../artifacts/model-config';
import { idleUnloadRefused } from '../../config/keys/cache';
import type { ServerConfig } from '../../config/types';
import { MmeError } from '../../errors';
import { kModeTraits } from '../hosts/host-policy';
import { isLimited } from '../processes/limit-enforcement';

/** A load: its name and url, what model-config.json can set too (the request's own comes first), and how to answer. */
export interface LoadRequest extends Omit<ModelDirConfig, 'maxWorkers'> {
  modelName: string;
  url: string;
  synchronous?: boolean;
  loadedAtStartup?: boolean;
}

/** What a model runs with: the type is what resolveSettings returns, so each field is written once. */
export type ModelSettings = ReturnType<typeof resolveSettings>;

export function resolveSettings(req: LoadRequest, artifact: ModelArtifact, c: ServerConfig) {
  const mc = artifact.modelConfig;
  const memoryLimitMb = req.memoryLimitMb ?? mc.memoryLimitMb ?? null;
  const cpuLimit = req.cpuLimit ?? mc.cpuLimit ?? null;
  // A model whose own config asks for a process of its own insists: its handler may not be fit to share one.
  // A limited model too: a limit holds whole processes, and a shared host's are its neighbours' as well.
  const insists = mc.workerMode && kModeTraits[mc.workerMode].ownProcess ? mc.workerMode : undefined;
  const limited = isLimited({ memoryLimitMb, cpuLimit }) ? 'dedicated' : undefined;
  const workerMode = insists ?? limited ?? req.workerMode ?? mc.workerMode ?? c.workerMode;
  const { ownProcess } = kModeTraits[workerMode];
  const pinned = req.pinned ?? mc.pinned ?? false;
  // A shared model is held by one host unless it asks for more: default_workers_per_model sizes dedicated models.
  const workers = req.minWorkers ?? mc.minWorkers ?? (ownProcess ? c.workersPerModel : 1);
  return {
    minWorkers: workers,
    maxWorkers: Math.max(workers, mc.maxWorkers ?? workers),
    batchSize: req.batchSize ?? mc.batchSize ?? c.defaultBatchSize,
    maxBatchDelayMs: req.maxBatchDelay ?? mc.maxBatchDelay ?? c.defaultMaxBatchDelayMs,
    jobQueueSize: req.jobQueueSize ?? mc.jobQueueSize ?? c.jobQueueSize,
    responseTimeoutMs: (req.responseTimeout ?? mc.responseTimeout ?? c.responseTimeoutSeconds) * 1000,
    loadTimeoutMs: (req.loadTimeout ?? mc.loadTimeout ?? c.modelLoadTimeoutSeconds) * 1000,
    useJobTicket: req.useJobTicket ?? mc.useJobTicket ?? false,
    /** One process holds the session; minWorkers becomes its number of concurrent batch slots. A host already shares one process among models: there is no session to share among workers. */
    preloadModel: ownProcess && (req.preloadModel ?? mc.preloadModel ?? c.preloadModel),
    deviceIds: req.deviceIds ?? mc.deviceIds ?? null,
    workerMode,
    /** The server's priority levels (priority_levels; 1 = a FIFO queue) and the wait that raises a job one level. */
    priorityLevels: c.priorityLevels,
    priorityAgingMs: c.priorityAgingMs,
    /** Its workers' memory and CPU, held by the kernel (processes/limit-enforcement.ts); null = none. */
    memoryLimitMb,
    cpuLimit,
    /** Never evicted by the cache (only DELETE unloads it); counted against the budget all the same. */
    pinned,
    /** Its eviction class: the cache takes low before normal before high (cache/eviction-classes.ts). */
    evictionPriority: req.evictionPriority ?? mc.evictionPriority ?? 'normal',
    /** Seconds without a request before it unloads itself (registration.ts); 0 = never, as for a pinned model. */
    idleUnloadSeconds: idleUnloadSeconds(req, mc, c, pinned),
    /** The artifact's handler (checked to be inside the model directory), else default_service_handler, the operator's own choice. */
    handlerPath:
      artifact.handlerPath ?? (c.defaultServiceHandler ? path.resolve(artifact.dir, c.defaultServiceHandler) : null),
  };
}

/**
 * The request's, else model-config.json's, else model_idle_unload_seconds (for an unpinned model).
 * Its own setting is refused where nothing would load the model again, and beside pinned: a pinned
 * model leaves only by DELETE.
 */
function idleUnloadSeconds(req: LoadRequest, mc: ModelDirConfig, c: ServerConfig, pinned: boolean): number {
  const own = req.idleUnloadSeconds ?? mc.idleUnloadSeconds;
  if (own === undefined) return pinned ? 0 : c.modelIdleUnloadSeconds;
  if (own === 0) return 0;
  const [code, field] =
    req.idleUnloadSeconds === undefined
      ? (['MME_ERR_INVALID_MODEL', `model-config.json's "idleUnloadSeconds": ${own}`] as const)
      : (['MME_ERR_BAD_REQUEST', `idle_unload_seconds=${own}`] as const);
  if (!c.modelCache) throw new MmeError(code, `${field} is refused: ${idleUnloadRefused(c.multiModel)}.`);
  if (pinned)
    throw new MmeError(
      code,
      `${field} is refused for a pinned model, which only DELETE /models/{name} unloads; drop one of idle_unload_seconds and pinned.`,
    );
  return own;
}

/** preload_model shares one session between all slots: one process instead of minWorkers. */
export function processCount(s: Pick<ModelSettings, 'preloadModel' | 'minWorkers'>): number {
  return s.preloadModel ? Math.min(1, s.minWorkers) : s.minWorkers;
}
