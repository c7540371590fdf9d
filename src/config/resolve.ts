/**
 * Builds the ServerConfig from its sources, in MMS's order: the file (with $$VAR$$ substitution),
 * the command line, MMS_<KEY> environment variables (only with enable_envvars_config), then the
 * SageMaker platform variables. Every key the tables mark plain lands in its field as read; the
 * section resolvers make the rest. The caller (load.ts) reads the file; resolving only asks
 * whether the model store is a directory (dirProblem, replaceable in tests).
 */
import { configError } from '../errors';
import { portClash, sameAddress } from './address';
import { cliSettings, type CliArgs } from './cli';
import { applyEnvOverrides } from './env-settings';
import { fileSettings, unknownKeysError, type Env } from './file-settings';
import { fieldOf, KEYS } from './keys';
import { idleUnloadRefused } from './keys/cache';
import { metricsConfig } from './metrics-config';
import { directoryProblem, modelStoreConfig, type DirProblem } from './model-store';
import { refusePlaceholders } from './placeholders';
import { repositoryConfig } from './repository';
import { applyBindToPort, maxPayloadFromEnv, multiModelFromEnv } from './sagemaker-env';
import { Settings } from './settings';
import { inferenceTokens, tlsConfig } from './tls-config';
import type { AutoscaleConfig, PlainConfig, ServerConfig } from './types';

export type { Env } from './file-settings';

export interface ResolveInput {
  readonly fileText: string | null;
  readonly configFile: string | null;
  readonly env: Env;
  readonly argv: CliArgs;
  /** Workers per model when default_workers_per_model=0 and number_of_gpu=0 (default 1). */
  readonly cpuCount?: number;
  /** Default: the file system, relative paths against the working directory. */
  readonly dirProblem?: DirProblem;
}

/** SageMaker's own limit for one invocation; a longer deadline would only hold a dead request. */
const kSageMakerInvokeLimitSeconds = 60;

export function resolveConfig(input: ResolveInput): ServerConfig {
  refusePlaceholders(input.env);
  const file = fileSettings(input.fileText, input.configFile, input.env);
  const values = file.settings;
  for (const [key, setting] of cliSettings(input.argv)) values.set(key, setting);
  applyEnvOverrides(values, input.env);
  const s = new Settings(values);
  if (file.unknownKeys.length > 0 && !s.read('allow_unknown_keys'))
    throw unknownKeysError(file.unknownKeys, input.configFile);

  const { inferenceAddress, managementAddress } = applyBindToPort(
    s.read('inference_address'),
    s.read('management_address'),
    input.env,
  );
  if (portClash(inferenceAddress, managementAddress)) {
    throw configError(
      `inference_address ${inferenceAddress.raw} and management_address ${managementAddress.raw} use the same port with different hosts or schemes, so they cannot both listen; make them identical to serve both APIs on one port, or use different ports`,
    );
  }
  const multiModel = multiModelFromEnv(input.env);
  const cpuCount = input.cpuCount ?? 1;
  const plain = readPlain(s);
  const modelCache = s.read('model_cache');
  const modelCacheOn = modelCache === 'auto' ? !multiModel : modelCache === 'on';
  const idleUnload = s.read('model_idle_unload_seconds');
  if (idleUnload > 0 && !modelCacheOn)
    throw configError(
      `config key model_idle_unload_seconds is ${idleUnload}${s.fromText('model_idle_unload_seconds')}, but ${idleUnloadRefused(multiModel)}`,
    );
  const metrics = metricsConfig(s, inferenceAddress, managementAddress);

  return deepFreeze({
    ...plain,
    ...modelStoreConfig(s, multiModel, input.dirProblem ?? directoryProblem(process.cwd())),
    ...metrics,
    configFile: input.configFile,
    inferenceAddress,
    managementAddress,
    sharedListener: sameAddress(inferenceAddress, managementAddress),
    // MMS ConfigManager.getDefaultWorkers: 0 means one per GPU if any, else one per CPU.
    workersPerModel: plain.defaultWorkersPerModel || plain.numberOfGpu || cpuCount,
    responseTimeoutSeconds: responseTimeoutSeconds(s),
    maxRequestSize: maxPayloadFromEnv(input.env) ?? s.read('max_request_size'),
    // SageMaker decides what to unload in MME mode; elsewhere nobody does, so the server must.
    modelCache: modelCacheOn,
    sharedWorkers: s.read('shared_workers') || cpuCount,
    autoscale: autoscaleConfig(s, multiModel, plain, cpuCount),
    inferenceTokens: inferenceTokens(s, multiModel),
    tls: tlsConfig(s, [
      ['inference_address', inferenceAddress],
      ['management_address', managementAddress],
      ['metrics_address', metrics.metricsAddress],
    ]),
    repository: repositoryConfig(s, multiModel, modelCacheOn),
    multiModel,
    unknownKeys: file.unknownKeys,
  });
}

/** Every key whose entry names a field (or leaves it to its camelCase name), read into it. */
function readPlain(s: Settings): PlainConfig {
  const plain: Record<string, unknown> = {};
  for (const spec of KEYS) {
    const field = fieldOf(spec);
    if (field === null) continue;
    const value = s.read(spec.name as Parameters<Settings['read']>[0]);
    plain[field] = spec.scale === undefined ? value : (value as number) * spec.scale;
  }
  return plain as PlainConfig;
}

/** SageMaker scales instances and places models itself: an instance growing its own workers would fight its plan. */
function autoscaleConfig(
  s: Settings,
  multiModel: boolean,
  plain: PlainConfig,
  cpuCount: number,
): AutoscaleConfig | null {
  const autoscale = s.read('autoscale');
  if (!(autoscale === 'auto' ? !multiModel : autoscale === 'on')) return null;
  // Workers of one model that the cores run at once, each running intraOpThreads onnxruntime
  // threads (0 = onnxruntime's one per core, so one worker fills them all).
  const cores = s.read('autoscale_cores') || cpuCount;
  return {
    queueWaitMs: s.read('autoscale_queue_wait_ms'),
    backlogPerWorker: s.read('autoscale_backlog_per_worker'),
    busyShare: s.read('autoscale_busy_share'),
    idleMs: s.read('autoscale_idle_seconds') * 1000,
    cooldownMs: s.read('autoscale_cooldown_seconds') * 1000,
    cpuWorkers: plain.numberOfGpu > 0 ? 0 : Math.max(1, Math.floor(cores / (plain.intraOpThreads || cores))),
  };
}

/**
 * default_response_timeout_seconds when set (negative = unset, as MMS's -1); else MMS's
 * default_response_timeout, which counts MINUTES, but only if someone wrote it (its MMS default of
 * 120 minutes would outlive any SageMaker request); else SageMaker's 60 s.
 */
function responseTimeoutSeconds(s: Settings): number {
  const seconds = s.read('default_response_timeout_seconds');
  if (seconds >= 0) return seconds;
  return s.has('default_response_timeout') ? s.read('default_response_timeout') * 60 : kSageMakerInvokeLimitSeconds;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
