/**
 * Builds the ServerConfig from file text, environment and command line, in MMS's order: parse,
 * $$VAR$$ substitution, CLI overrides, MMS_<KEY> env overrides (only with enable_envvars_config),
 * then the SageMaker platform variables. Pure: the caller (load.ts) does all I/O, so every rule
 * here is testable with plain objects.
 */
import { MmeError } from '../errors';
import { kLogFormats, kLogLevels } from '../logger';
import { kGraphOptimizationLevels } from '../protocol/messages';
import { kAddressForms, parseAddress, portClash, sameAddress, withPort } from './address';
import type { CliArgs } from './cli';
import { envOverrideName, KEYS, keySpec, MAX_BODY_BYTES, nearestKey, type KeyName, type KindOf } from './keys';
import { parseProperties } from './properties';
import { repositoryConfig } from './repository';
import type { ListenAddress, ServerConfig, TlsConfig } from './types';
import { invalidValue, readValue, type KindValue, type Setting } from './values';

export type Env = Readonly<Record<string, string | undefined>>;

export interface ResolveInput {
  /** config.properties text, or null when no file is read. */
  readonly fileText: string | null;
  readonly configFile: string | null;
  readonly env: Env;
  readonly argv: CliArgs;
  /** Workers per model when default_workers_per_model=0 and number_of_gpu=0 (default 1). */
  readonly cpuCount?: number;
}

/** SageMaker's own limit for one invocation; a longer deadline would only hold a dead request. */
const kSageMakerInvokeLimitSeconds = 60;

/** MMS's pattern (ConfigManager.resolveEnvVarVals): names of at least two characters. */
const kEnvPlaceholder = /\$\$([^$]+[^$])\$\$/g;

export function resolveConfig(input: ResolveInput): ServerConfig {
  const { settings, unknownKeys } = collectSettings(input);
  // readValue returns the type of spec.kind; the cast only tells the compiler which kind N has.
  const read = <N extends KeyName>(name: N): KindValue[KindOf<N>] => {
    const spec = keySpec(name)!;
    return readValue(spec, settings.get(name) ?? { value: spec.default ?? '', from: null }) as KindValue[KindOf<N>];
  };
  if (unknownKeys.length > 0 && !read('allow_unknown_keys')) throw unknownKeysError(unknownKeys, input.configFile);

  const { inferenceAddress, managementAddress } = applyBindToPort(
    read('inference_address'),
    read('management_address'),
    input.env,
  );
  if (portClash(inferenceAddress, managementAddress)) {
    throw new MmeError(
      'MME_ERR_CONFIG',
      `inference_address ${inferenceAddress.raw} and management_address ${managementAddress.raw} use the same port with different hosts or schemes, so they cannot both listen; make them identical to serve both APIs on one port, or use different ports`,
    );
  }

  const modelStore = read('model_store');
  const loadModels = read('load_models');
  if (loadModels === 'ALL' && modelStore === null) {
    throw new MmeError(
      'MME_ERR_CONFIG',
      'config key load_models is ALL but model_store is not set (expected model_store=DIR, e.g. model_store=/opt/ml/models, or --model-store DIR)',
    );
  }

  const defaultWorkersPerModel = read('default_workers_per_model');
  const numberOfGpu = read('number_of_gpu');
  const maxPayloadBytes = maxPayloadFromEnv(input.env);
  const multiModel = multiModelFromEnv(input.env);
  const modelCache = oneOf(read('model_cache') ?? 'auto', 'model_cache', ['auto', 'on', 'off'] as const, settings);
  const modelCacheOn = modelCache === 'auto' ? !multiModel : modelCache === 'on';
  const autoscale = oneOf(read('autoscale') ?? 'auto', 'autoscale', ['auto', 'on', 'off'] as const, settings);
  const evictionPolicy = oneOf(
    read('eviction_policy') ?? 'gdsf',
    'eviction_policy',
    ['gdsf', 'lru'] as const,
    settings,
  );

  const metrics = metricsConfig(read, settings, inferenceAddress, managementAddress);
  const tls = tlsConfig(read, settings, [
    ['inference_address', inferenceAddress],
    ['management_address', managementAddress],
    ['metrics_address', metrics.metricsAddress],
  ]);

  return deepFreeze({
    configFile: input.configFile,
    inferenceAddress,
    managementAddress,
    sharedListener: sameAddress(inferenceAddress, managementAddress),
    modelStore,
    loadModels,
    defaultWorkersPerModel,
    // MMS ConfigManager.getDefaultWorkers: 0 means one per GPU if any, else one per CPU.
    workersPerModel: defaultWorkersPerModel || numberOfGpu || (input.cpuCount ?? 1),
    jobQueueSize: read('job_queue_size'),
    preloadModel: read('preload_model'),
    responseTimeoutSeconds: responseTimeoutSeconds(
      read('default_response_timeout_seconds'),
      settings.has('default_response_timeout') ? read('default_response_timeout') : null,
    ),
    maxRequestTimeoutSeconds: read('max_request_timeout'),
    priorityLevels: read('priority_levels'),
    priorityAgingMs: read('priority_aging_ms'),
    modelLoadTimeoutSeconds: read('model_load_timeout'),
    unregisterModelTimeoutSeconds: read('unregister_model_timeout'),
    maxRequestSize: maxPayloadBytes ?? read('max_request_size'),
    maxResponseSize: read('max_response_size'),
    maxRequestElements: read('max_request_elements'),
    decodeInputRequest: read('decode_input_request'),
    accessLog: read('access_log'),
    logFormat: oneOf(read('log_format') ?? 'text', 'log_format', kLogFormats, settings),
    logLevel: oneOf(read('log_level') ?? 'info', 'log_level', kLogLevels, settings),
    maxStreamBuffer: read('max_stream_buffer'),
    numberOfGpu,
    metricTimeIntervalSeconds: read('metric_time_interval'),
    defaultBatchSize: read('batch_size'),
    defaultMaxBatchDelayMs: read('max_batch_delay'),
    defaultServiceHandler: read('default_service_handler'),
    blacklistEnvVars: read('blacklist_env_vars'),
    intraOpThreads: read('onnx_intra_op_threads'),
    interOpThreads: read('onnx_inter_op_threads'),
    graphOptimizationLevel: oneOf(
      read('onnx_graph_optimization_level') ?? 'all',
      'onnx_graph_optimization_level',
      kGraphOptimizationLevels,
      settings,
    ),
    // SageMaker decides what to unload in MME mode; elsewhere nobody does, so the server must.
    modelCache: modelCacheOn,
    maxLoadedModels: read('max_loaded_models'),
    modelMemoryBudgetBytes: read('model_memory_budget_mb') * 2 ** 20,
    modelMemoryReserveBytes: read('model_memory_reserve_mb') * 2 ** 20,
    maxConcurrentLoads: read('max_concurrent_loads'),
    loadWaitTimeoutSeconds: read('load_wait_timeout'),
    loadFailureCacheSeconds: read('load_failure_cache_seconds'),
    evictionPolicy,
    evictionDrainTimeoutSeconds: read('eviction_drain_timeout'),
    shutdownTimeoutSeconds: read('shutdown_timeout'),
    spareWorkers: read('spare_workers'),
    bodyHandoffBytes: read('body_handoff_bytes'),
    bodyHandoffDir: read('body_handoff_dir'),
    bodyHandoffMinBytes: read('body_handoff_min_bytes'),
    workerMode: oneOf(read('worker_mode') ?? 'dedicated', 'worker_mode', ['dedicated', 'shared'] as const, settings),
    sharedWorkers: read('shared_workers') || (input.cpuCount ?? 1),
    maxModelsPerWorker: read('max_models_per_worker'),
    sharedWorkerRecycleBytes: read('shared_worker_recycle_mb') * 2 ** 20,
    sharedHostHeavyShare: read('shared_host_heavy_share'),
    // SageMaker scales instances and places models itself: an instance growing its own workers would fight its plan.
    autoscale: (autoscale === 'auto' ? !multiModel : autoscale === 'on')
      ? {
          queueWaitMs: read('autoscale_queue_wait_ms'),
          backlogPerWorker: read('autoscale_backlog_per_worker'),
          busyShare: read('autoscale_busy_share'),
          idleMs: read('autoscale_idle_seconds') * 1000,
          cooldownMs: read('autoscale_cooldown_seconds') * 1000,
          cpuWorkers:
            numberOfGpu > 0
              ? 0
              : cpuWorkers(read('autoscale_cores') || (input.cpuCount ?? 1), read('onnx_intra_op_threads')),
        }
      : null,
    modelRoots: modelRoots(read('model_roots'), modelStore),
    managementToken: read('management_token'),
    inferenceTokens: inferenceTokens(read('inference_token'), multiModel, settings),
    maxConnections: read('max_connections'),
    grpcInferenceAddress: read('grpc_inference_address') ?? '127.0.0.1',
    grpcInferencePort: grpcPort(read('grpc_inference_port'), settings),
    repository: repositoryConfig(
      {
        url: read('model_repository'),
        endpoint: read('model_repository_endpoint'),
        ttlSeconds: read('model_repository_ttl'),
        timeoutSeconds: read('model_repository_timeout'),
        maxConcurrentDownloads: read('max_concurrent_downloads'),
        cacheDir: read('model_cache_dir'),
        cacheDiskMb: read('model_cache_disk_mb'),
      },
      settings,
      multiModel,
      modelCacheOn,
    ),
    multiModel,
    unknownKeys,
    tls,
    otelTracesSamplerRatio: read('otel_traces_sampler_ratio'),
    otelExporterOtlpEndpoint: otlpEndpoint(read('otel_exporter_otlp_endpoint'), settings),
    ...metrics,
  });
}

type Read = <N extends KeyName>(name: N) => KindValue[KindOf<N>];
type Fail = (key: string, raw: string, problem: string, expected: string, example: string) => MmeError;

type MetricsConfig = Pick<ServerConfig, Extract<keyof ServerConfig, `metrics${string}`>>;

/** CloudWatch's namespace alphabet (PutMetricData rejects anything else, at the first interval). */
const kNamespace = /^[0-9A-Za-z.\-_/#: ]{1,255}$/;

/**
 * Workers of one model that `cores` run at once, each running `intraOpThreads` onnxruntime threads
 * (0 = onnxruntime's one per core, so one worker fills them all).
 */
function cpuWorkers(cores: number, intraOpThreads: number): number {
  return Math.max(1, Math.floor(cores / (intraOpThreads || cores)));
}

/** The metrics_* keys, checked here so that a mistake stops start-up instead of failing every interval. */
function metricsConfig(
  read: Read,
  settings: Map<string, Setting>,
  inference: ListenAddress,
  management: ListenAddress,
): MetricsConfig {
  const fail: Fail = (key, raw, problem, expected, example) =>
    invalidValue(`config key ${key}`, raw, problem, expected, example, settings.get(key)?.from ?? null);

  const namespace = read('metrics_namespace') ?? 'SageMakerMME';
  if (!kNamespace.test(namespace) || /^AWS\//i.test(namespace)) {
    throw fail(
      'metrics_namespace',
      namespace,
      'is not a namespace CloudWatch accepts',
      '1-255 of A-Z a-z 0-9 . - _ / # : and space, not starting with AWS/',
      'metrics_namespace=SageMakerMME',
    );
  }
  const endpoint = read('metrics_cloudwatch_endpoint');
  if (endpoint !== null && !isHttpUrl(endpoint)) {
    throw fail(
      'metrics_cloudwatch_endpoint',
      endpoint,
      'is not an http(s) URL',
      'an http:// or https:// URL',
      'metrics_cloudwatch_endpoint=https://monitoring.us-east-1.amazonaws.com',
    );
  }
  return {
    metricsEndpointName: read('metrics_endpoint_name'),
    metricsVariantName: read('metrics_variant_name'),
    metricsPerModel: read('metrics_per_model_dimension'),
    metricsNamespace: namespace,
    metricsCloudwatch: read('metrics_cloudwatch'),
    metricsCloudwatchRegion: read('metrics_cloudwatch_region'),
    metricsCloudwatchEndpoint: endpoint,
    metricsCloudwatchMaxBuffered: read('metrics_cloudwatch_max_buffered'),
    metricsEmf: destination(read('metrics_emf')),
    metricsMmsLog: destination(read('metrics_mms_log')),
    metricsPrometheus: read('metrics_prometheus'),
    metricsAddress: metricsAddress(read('metrics_address'), inference, management, fail),
  };
}

/** Checked at start: an endpoint the exporter cannot use would fail only at its first export. */
function otlpEndpoint(endpoint: string | null, settings: Map<string, Setting>): string | null {
  if (endpoint !== null && !isHttpUrl(endpoint)) {
    throw invalidValue(
      'config key otel_exporter_otlp_endpoint',
      endpoint,
      'is not an http(s) URL',
      'an http:// or https:// URL, the OTLP/HTTP base without /v1/traces',
      'otel_exporter_otlp_endpoint=http://otel-collector:4318',
      settings.get('otel_exporter_otlp_endpoint')?.from ?? null,
    );
  }
  return endpoint;
}

function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** off (or empty) = null; stdout in any case = 'stdout'; anything else is a file path. */
function destination(value: string | null): string | null {
  const lower = value?.toLowerCase();
  if (value === null || lower === 'off') return null;
  return lower === 'stdout' ? 'stdout' : value;
}

/** null when /metrics belongs on the management listener (unset, or the same address written out). */
function metricsAddress(
  raw: string | null,
  inference: ListenAddress,
  management: ListenAddress,
  fail: Fail,
): ListenAddress | null {
  if (raw === null) return null;
  const example = 'metrics_address=http://0.0.0.0:9100';
  const address = parseAddress(raw);
  if ('problem' in address)
    throw fail('metrics_address', raw, `is not a valid address: ${address.problem}`, kAddressForms, example);
  if (sameAddress(address, management)) return null;
  if (sameAddress(address, inference) || portClash(address, inference) || portClash(address, management)) {
    throw fail(
      'metrics_address',
      raw,
      'collides with inference_address or management_address',
      'unset (/metrics on the management listener) or a port of its own',
      example,
    );
  }
  return address;
}

/** A TCP port, or null (unset) for no gRPC listener. */
function grpcPort(raw: string | null, settings: Map<string, Setting>): number | null {
  if (raw === null) return null;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) {
    throw invalidValue(
      'config key grpc_inference_port',
      raw,
      'is not a TCP port',
      'a whole number from 0 to 65535, or unset for no gRPC listener',
      'grpc_inference_port=7070',
      settings.get('grpc_inference_port')?.from ?? null,
    );
  }
  return port;
}

/**
 * The tls_* keys, and the addresses' schemes made to agree with them: an https:// listener needs the
 * certificate; with one, an http:// inference_address is a likely mistake (plain text where TLS
 * was meant), while management_address and metrics_address may stay http:// (e.g. on loopback).
 */
function tlsConfig(
  read: Read,
  settings: Map<string, Setting>,
  addresses: ReadonlyArray<readonly [string, ListenAddress | null]>,
): TlsConfig | null {
  const certFile = read('tls_cert_file');
  const keyFile = read('tls_key_file');
  const clientCaFile = read('tls_client_ca_file');
  if ((certFile === null) !== (keyFile === null) || (clientCaFile !== null && certFile === null)) {
    const set = ['tls_cert_file', 'tls_key_file', 'tls_client_ca_file'].filter((k) => settings.has(k));
    throw new MmeError(
      'MME_ERR_CONFIG',
      `config keys tls_cert_file and tls_key_file go together (and tls_client_ca_file needs them), but only ${set.join(' and ')} ${set.length > 1 ? 'are' : 'is'} set${fromText(settings, set[0])}; set both files for TLS, or none`,
    );
  }
  if (certFile === null || keyFile === null) {
    const https = addresses.find(([, a]) => a?.scheme === 'https');
    if (https) {
      throw new MmeError(
        'MME_ERR_CONFIG',
        `${https[0]} ${https[1]!.raw} is https:// but no certificate is configured; set tls_cert_file and tls_key_file, or use http://`,
      );
    }
    return null;
  }
  const [, inference] = addresses[0];
  if (inference?.scheme === 'http') {
    throw new MmeError(
      'MME_ERR_CONFIG',
      `tls_cert_file is set but inference_address ${inference.raw} is http://, so the data plane would be served in plain text; write https://${inference.raw.slice('http://'.length)} (management_address and metrics_address may stay http://)`,
    );
  }
  return { certFile, keyFile, clientCaFile };
}

/** inference_token's comma list; SageMaker's platform would be refused, since it sends no token. */
function inferenceTokens(raw: string | null, multiModel: boolean, settings: Map<string, Setting>): string[] {
  if (raw === null) return [];
  if (multiModel) {
    throw new MmeError(
      'MME_ERR_CONFIG',
      `config key inference_token is set${fromText(settings, 'inference_token')} but SAGEMAKER_MULTI_MODEL=true: SageMaker's platform sends no token, so every invoke would be refused; remove inference_token (SageMaker authenticates callers itself)`,
    );
  }
  const tokens = raw.split(',').map((t) => t.trim());
  if (tokens.some((t) => t === '' || /\s/.test(t))) {
    throw new MmeError(
      'MME_ERR_CONFIG',
      `config key inference_token has an empty token or one with a space${fromText(settings, 'inference_token')} (expected a comma list of tokens, e.g. inference_token=$$MME_INFERENCE_TOKEN$$ or new-token,old-token)`,
    );
  }
  return tokens;
}

/** " (set in FILE)": where a key's value came from; '' for a default. */
function fromText(settings: Map<string, Setting>, key: string): string {
  const from = settings.get(key)?.from;
  return from ? ` (set ${from})` : '';
}

/** SageMaker puts models under /opt/ml/models; locally they live in model_store. */
function modelRoots(raw: string | null, modelStore: string | null): string[] {
  const roots = raw === null ? [modelStore, '/opt/ml/models'] : raw.split(',').map((r) => r.trim());
  return [...new Set(roots.filter((r): r is string => !!r))];
}

function oneOf<T extends string>(value: string, key: string, allowed: readonly T[], settings: Map<string, Setting>): T {
  const v = value.trim().toLowerCase();
  if (!(allowed as readonly string[]).includes(v)) {
    throw invalidValue(
      `config key ${key}`,
      value,
      'is not one of the allowed values',
      allowed.join(', '),
      `${key}=${allowed[0]}`,
      settings.get(key)?.from ?? null,
    );
  }
  return v as T;
}

/** The raw value of every key after file, substitution, CLI and MMS_<KEY> env, with its origin. */
function collectSettings(input: ResolveInput): { settings: Map<string, Setting>; unknownKeys: string[] } {
  const fileName = input.configFile ?? 'the config file';
  const file = input.fileText === null ? new Map<string, string>() : parseProperties(input.fileText, fileName);
  const settings = new Map<string, Setting>();
  for (const [key, value] of file)
    settings.set(key, { value: substituteEnv(key, value, input.env), from: `in ${fileName}` });

  if (input.argv.modelStore !== null)
    settings.set('model_store', { value: input.argv.modelStore, from: 'by --model-store' });
  if (input.argv.models !== null)
    settings.set('load_models', { value: input.argv.models.join(','), from: 'by --models' });

  const enableSetting = settings.get('enable_envvars_config');
  if (enableSetting && readValue(keySpec('enable_envvars_config')!, enableSetting) === true) {
    for (const { name } of KEYS) {
      const envName = envOverrideName(name);
      const value = input.env[envName];
      // enable_envvars_config itself is not overridable: MMS reads it from the file only.
      if (value !== undefined && name !== 'enable_envvars_config')
        settings.set(name, { value, from: `by environment variable ${envName}` });
    }
  }
  return { settings, unknownKeys: [...file.keys()].filter((key) => keySpec(key) === undefined) };
}

/** A typo'd key would otherwise leave its setting at the default without a word (max_loaded_model=2: no limit). */
function unknownKeysError(unknownKeys: readonly string[], configFile: string | null): MmeError {
  const described = unknownKeys.map((key) => {
    const meant = nearestKey(key);
    return `${key.slice(0, 100)}${meant === null ? '' : ` (did you mean ${meant}?)`}`;
  });
  return new MmeError(
    'MME_ERR_CONFIG',
    `unknown config key${unknownKeys.length > 1 ? 's' : ''} in ${configFile ?? 'the config file'}: ${described.join(', ')}; fix the name, or set allow_unknown_keys=true to keep keys meant for other servers (they are then logged and ignored)`,
  );
}

/** Replaces every $$VAR$$ with the variable's value (literally: no `$` tricks as in Java's appendReplacement). */
function substituteEnv(key: string, value: string, env: Env): string {
  return value.replace(kEnvPlaceholder, (_match, name: string) => {
    const replacement = env[name];
    if (replacement === undefined) {
      throw new MmeError(
        'MME_ERR_CONFIG',
        `config key ${key} uses $$${name}$$ but environment variable ${name} is not set`,
      );
    }
    return replacement;
  });
}

/**
 * default_response_timeout_seconds when set (negative = unset, as MMS's -1); else MMS's
 * default_response_timeout, which counts MINUTES, but only if someone wrote it (its MMS default of
 * 120 minutes would outlive any SageMaker request); else SageMaker's 60 s.
 */
function responseTimeoutSeconds(seconds: number, writtenMinutes: number | null): number {
  if (seconds >= 0) return seconds;
  return writtenMinutes === null ? kSageMakerInvokeLimitSeconds : writtenMinutes * 60;
}

/** SageMaker decides the port (multi-container endpoints, pipelines); the configured hosts stay. */
function applyBindToPort(
  inference: ListenAddress,
  management: ListenAddress,
  env: Env,
): { inferenceAddress: ListenAddress; managementAddress: ListenAddress } {
  const raw = env.SAGEMAKER_BIND_TO_PORT;
  if (raw === undefined || raw === '') return { inferenceAddress: inference, managementAddress: management };
  const port = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || port < 1 || port > 65535) {
    throw invalidValue(
      'environment variable SAGEMAKER_BIND_TO_PORT',
      raw,
      'is not a port number',
      'a whole number 1-65535',
      'SAGEMAKER_BIND_TO_PORT=8080',
    );
  }
  if (inference.scheme === 'unix') {
    throw new MmeError(
      'MME_ERR_CONFIG',
      `environment variable SAGEMAKER_BIND_TO_PORT is ${raw} but inference_address ${inference.raw} is a unix socket, which SageMaker cannot reach; use http://0.0.0.0:8080`,
    );
  }
  // A unix management socket stays where it is: it has no port and SageMaker never calls it there.
  return {
    inferenceAddress: withPort(inference, port),
    managementAddress: management.scheme === 'unix' ? management : withPort(management, port),
  };
}

function multiModelFromEnv(env: Env): boolean {
  const raw = env.SAGEMAKER_MULTI_MODEL;
  if (raw === undefined || raw === '') return false;
  const lower = raw.trim().toLowerCase();
  if (lower !== 'true' && lower !== 'false') {
    throw invalidValue(
      'environment variable SAGEMAKER_MULTI_MODEL',
      raw,
      'is not a boolean',
      'true or false',
      'SAGEMAKER_MULTI_MODEL=true',
    );
  }
  return lower === 'true';
}

/** SAGEMAKER_MAX_PAYLOAD_IN_MB in bytes (MiB, as the SageMaker inference toolkit converts it), or null. */
function maxPayloadFromEnv(env: Env): number | null {
  const raw = env.SAGEMAKER_MAX_PAYLOAD_IN_MB;
  if (raw === undefined || raw === '') return null;
  const mb = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(mb > 0) || mb * 1024 * 1024 > MAX_BODY_BYTES) {
    throw invalidValue(
      'environment variable SAGEMAKER_MAX_PAYLOAD_IN_MB',
      raw,
      'is not a positive number of at most 1024',
      'megabytes > 0, at most 1024',
      'SAGEMAKER_MAX_PAYLOAD_IN_MB=6',
    );
  }
  return Math.floor(mb * 1024 * 1024);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
