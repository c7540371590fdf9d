/**
 * A model's effective settings: the load request first, then its model-config.json, then
 * config.properties (MMS's order), and the handler module it runs.
 */
import path from 'node:path';
import type { ModelArtifact } from '../../artifacts/model-artifact';
import type { ServerConfig, WorkerMode } from '../../config/types';
import { MmeError, quote } from '../../errors';
import { nearestName } from '../../util/nearest-name';
import { kModeTraits } from '../hosts/host-policy';
import { isLimited } from '../processes/process-limits';

/** The fields of a load request as clients send them (MMS's names), in the body or the query string of POST /models. */
export const kLoadRequestFields = [
  'model_name',
  'url',
  'handler',
  'batch_size',
  'max_batch_delay',
  'initial_workers',
  'response_timeout',
  'load_timeout',
  'job_queue_size',
  'use_job_ticket',
  'preload_model',
  'device_ids',
  'worker_mode',
  'synchronous',
  'memory_limit_mb',
  'cpu_limit',
] as const;

/** An unknown field would be dropped in silence ("pinnned": true loads a model unpinned): refused, with a did-you-mean. */
export function checkLoadRequestFields(fields: readonly string[]): void {
  const known: readonly string[] = kLoadRequestFields;
  const unknown = fields.filter((f) => !known.includes(f));
  if (unknown.length === 0) return;
  const described = unknown.slice(0, 5).map((f) => {
    const meant = nearestName(f, kLoadRequestFields);
    return `${quote(f)}${meant === null ? '' : ` (did you mean ${meant}?)`}`;
  });
  const more = unknown.length > 5 ? ` and ${unknown.length - 5} more` : '';
  throw new MmeError(
    'MME_ERR_UNKNOWN_FIELD',
    `Unknown field${unknown.length > 1 ? 's' : ''} in the load request: ${described.join(', ')}${more}. The fields are ${kLoadRequestFields.join(', ')}.`,
  );
}

export interface LoadRequest {
  modelName: string;
  url: string;
  handler?: string;
  batchSize?: number;
  maxBatchDelayMs?: number;
  initialWorkers?: number;
  responseTimeoutSeconds?: number;
  loadTimeoutSeconds?: number;
  jobQueueSize?: number;
  useJobTicket?: boolean;
  preloadModel?: boolean;
  deviceIds?: number[];
  workerMode?: WorkerMode;
  synchronous?: boolean;
  loadedAtStartup?: boolean;
  memoryLimitMb?: number;
  cpuLimit?: number;
}

export interface ModelSettings {
  minWorkers: number;
  maxWorkers: number;
  batchSize: number;
  maxBatchDelayMs: number;
  jobQueueSize: number;
  responseTimeoutMs: number;
  loadTimeoutMs: number;
  useJobTicket: boolean;
  /** One process holds the session; minWorkers becomes its number of concurrent batch slots. */
  preloadModel: boolean;
  deviceIds: readonly number[] | null;
  workerMode: WorkerMode;
  /** The server's priority levels (priority_levels; 1 = a FIFO queue) and the wait that raises a job one level. */
  priorityLevels: number;
  priorityAgingMs: number;
  /** Its workers' memory and CPU, held by the kernel (processes/process-limits.ts); null = none. */
  memoryLimitMb: number | null;
  cpuLimit: number | null;
}

export function resolveSettings(req: LoadRequest, artifact: ModelArtifact, c: ServerConfig): ModelSettings {
  const mc = artifact.modelConfig;
  const memoryLimitMb = req.memoryLimitMb ?? mc.memoryLimitMb ?? null;
  const cpuLimit = req.cpuLimit ?? mc.cpuLimit ?? null;
  // A model whose own config asks for a process of its own insists: its handler may not be fit to share one.
  // A limited model too: a limit holds whole processes, and a shared host's are its neighbours' as well.
  const insists = mc.workerMode && kModeTraits[mc.workerMode].ownProcess ? mc.workerMode : undefined;
  const limited = isLimited({ memoryLimitMb, cpuLimit }) ? 'dedicated' : undefined;
  const workerMode = insists ?? limited ?? req.workerMode ?? mc.workerMode ?? c.workerMode;
  const { ownProcess } = kModeTraits[workerMode];
  // A shared model is held by one host unless it asks for more: default_workers_per_model sizes dedicated models.
  const workers = req.initialWorkers ?? mc.minWorkers ?? (ownProcess ? c.workersPerModel : 1);
  return {
    minWorkers: workers,
    maxWorkers: Math.max(workers, mc.maxWorkers ?? workers),
    batchSize: req.batchSize ?? mc.batchSize ?? c.defaultBatchSize,
    maxBatchDelayMs: req.maxBatchDelayMs ?? mc.maxBatchDelay ?? c.defaultMaxBatchDelayMs,
    jobQueueSize: req.jobQueueSize ?? mc.jobQueueSize ?? c.jobQueueSize,
    responseTimeoutMs: (req.responseTimeoutSeconds ?? mc.responseTimeout ?? c.responseTimeoutSeconds) * 1000,
    loadTimeoutMs: (req.loadTimeoutSeconds ?? mc.loadTimeout ?? c.modelLoadTimeoutSeconds) * 1000,
    useJobTicket: req.useJobTicket ?? mc.useJobTicket ?? false,
    // A host already shares one process among models: there is no session to share among workers.
    preloadModel: ownProcess && (req.preloadModel ?? mc.preloadModel ?? c.preloadModel),
    deviceIds: req.deviceIds ?? mc.deviceIds ?? null,
    workerMode,
    priorityLevels: c.priorityLevels,
    priorityAgingMs: c.priorityAgingMs,
    memoryLimitMb,
    cpuLimit,
  };
}

/** preload_model shares one session between all slots: one process instead of minWorkers. */
export function processCount(s: Pick<ModelSettings, 'preloadModel' | 'minWorkers'>): number {
  return s.preloadModel ? Math.min(1, s.minWorkers) : s.minWorkers;
}

/** The artifact's handler (checked to be inside the model directory), else default_service_handler, the operator's own choice. */
export function resolveHandlerPath(artifact: ModelArtifact, c: ServerConfig): string | null {
  if (artifact.handlerPath) return artifact.handlerPath;
  return c.defaultServiceHandler ? path.resolve(artifact.dir, c.defaultServiceHandler) : null;
}
