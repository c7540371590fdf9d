/** The resolved, frozen configuration every other module reads. Built only by resolveConfig(). */
import type { LogFormat, LogLevel } from '../logger';
import type { GraphOptimizationLevel } from '../protocol/messages';

export interface ListenAddress {
  /** The address as written in the config (after $$VAR$$ substitution; port rewritten by SAGEMAKER_BIND_TO_PORT), for logs. */
  readonly raw: string;
  readonly scheme: 'http' | 'https' | 'unix';
  /** Hostname or IP for http(s); '' for unix. */
  readonly host: string;
  /** TCP port (0 = ephemeral, used by tests); 0 for unix. */
  readonly port: number;
  /** Socket path for unix addresses. */
  readonly path: string;
}

export interface ModelToLoad {
  /** Explicit name from `name=url`, else derived from the url (directory or archive base name). */
  readonly name: string;
  readonly url: string;
}

/** dedicated: processes of the model's own; shared: a slot in a host process holding many models. */
export type WorkerMode = 'dedicated' | 'shared';

/** model_repository and its disk cache (self-managed mode only). */
export interface RepositoryConfig {
  /** The key as written, for logs and the url of models loaded from it. */
  readonly url: string;
  readonly bucket: string;
  /** '' or a key prefix without a trailing '/'. */
  readonly prefix: string;
  /** null = the SDK's default endpoint. */
  readonly endpoint: string | null;
  readonly ttlSeconds: number;
  readonly timeoutSeconds: number;
  readonly maxConcurrentDownloads: number;
  readonly cacheDir: string;
  readonly cacheDiskBytes: number;
}

/** tls_cert_file, tls_key_file and tls_client_ca_file: what every TLS listener serves. */
export interface TlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  /** null = no client certificate asked for. */
  readonly clientCaFile: string | null;
}

export interface ServerConfig {
  /** Which file was read, or null when built-in defaults apply. */
  readonly configFile: string | null;
  readonly inferenceAddress: ListenAddress;
  readonly managementAddress: ListenAddress;
  /** True when both addresses are equal: one listener serves both APIs (the SageMaker port). */
  readonly sharedListener: boolean;
  readonly modelStore: string | null;
  /** 'ALL' = every model directory / .tar.gz in model_store; else an explicit list. */
  readonly loadModels: 'ALL' | readonly ModelToLoad[];
  /** Raw configured value; 0 means "one per CPU" as in MMS (resolved by the model server). */
  readonly defaultWorkersPerModel: number;
  /** defaultWorkersPerModel with 0 resolved as MMS's getDefaultWorkers: numberOfGpu if > 0, else the CPU count. */
  readonly workersPerModel: number;
  readonly jobQueueSize: number;
  readonly preloadModel: boolean;
  /** Per-request deadline, seconds (already converted from MMS's minutes key if that was used). */
  readonly responseTimeoutSeconds: number;
  /** Longest deadline a caller may ask for, seconds; 0 = none but the response timeout. */
  readonly maxRequestTimeoutSeconds: number;
  /** Priority levels callers choose from; 1 = no priorities (FIFO queues). */
  readonly priorityLevels: number;
  /** Waiting that raises a queued request by one priority level, ms. */
  readonly priorityAgingMs: number;
  /** Deadline for one worker to load a model, seconds. */
  readonly modelLoadTimeoutSeconds: number;
  readonly unregisterModelTimeoutSeconds: number;
  readonly maxRequestSize: number;
  readonly maxResponseSize: number;
  readonly maxRequestElements: number;
  readonly decodeInputRequest: boolean;
  readonly accessLog: boolean;
  readonly logFormat: LogFormat;
  /** Least severe level written (log_level). */
  readonly logLevel: LogLevel;
  readonly maxStreamBuffer: number;
  readonly numberOfGpu: number;
  readonly metricTimeIntervalSeconds: number;
  readonly defaultBatchSize: number;
  readonly defaultMaxBatchDelayMs: number;
  readonly defaultServiceHandler: string | null;
  /** Env var names matching this are not passed to workers (MMS blacklist_env_vars). */
  readonly blacklistEnvVars: RegExp | null;
  /** onnxruntime intra-op threads per worker (default 1: N models must not start N x cores threads). */
  readonly intraOpThreads: number;
  readonly interOpThreads: number;
  /** onnxruntime's graph optimization level for every session (onnx_graph_optimization_level). */
  readonly graphOptimizationLevel: GraphOptimizationLevel;
  /** The self-managed cache (on-demand loading and eviction) is on. */
  readonly modelCache: boolean;
  /** 0 = no count limit. */
  readonly maxLoadedModels: number;
  /** Explicit budget in bytes, or 0 to derive it from the memory limit minus the reserve. */
  readonly modelMemoryBudgetBytes: number;
  readonly modelMemoryReserveBytes: number;
  readonly maxConcurrentLoads: number;
  readonly loadWaitTimeoutSeconds: number;
  readonly loadFailureCacheSeconds: number;
  readonly evictionPolicy: 'gdsf' | 'lru';
  readonly evictionDrainTimeoutSeconds: number;
  readonly shutdownTimeoutSeconds: number;
  /** Directories a load url must resolve into (relative ones against the working directory). */
  readonly modelRoots: readonly string[];
  /** Bearer token the management API requires, or null. */
  readonly managementToken: string | null;
  /** inference_token's tokens (any one is accepted); empty = the data plane needs none. */
  readonly inferenceTokens: readonly string[];
  /** The certificate of every https:// listener and of gRPC; null = no TLS. */
  readonly tls: TlsConfig | null;
  readonly maxConnections: number;
  /** gRPC inference listener host, and its port (null = no gRPC listener). */
  readonly grpcInferenceAddress: string;
  readonly grpcInferencePort: number | null;
  /** Started, model-less workers kept ready for the next load. */
  readonly spareWorkers: number;
  /** Each worker process's shared-memory body ring (bytes; 0 = off), where its rings live (null = /dev/shm or a tmpfs $TMPDIR), and the smallest body sent through one. */
  readonly bodyHandoffBytes: number;
  readonly bodyHandoffDir: string | null;
  readonly bodyHandoffMinBytes: number;
  /** Where models run unless their load request or model-config.json says otherwise. */
  readonly workerMode: WorkerMode;
  /** Host processes for shared-mode models. */
  readonly sharedWorkers: number;
  /** 0 = no cap. */
  readonly maxModelsPerWorker: number;
  /** Waste (bytes) past which a shared host is recycled; 0 = never. */
  readonly sharedWorkerRecycleBytes: number;
  /** shared_host_heavy_share: a model's share of its host past which its neighbours move away; 0 = never. */
  readonly sharedHostHeavyShare: number;
  /** Per-model worker autoscaling (autoscale, its auto resolved); null = off. */
  readonly autoscale: AutoscaleConfig | null;
  /** null = no model_repository: on-demand loads read model_store only. */
  readonly repository: RepositoryConfig | null;
  /** SAGEMAKER_MULTI_MODEL=true. */
  readonly multiModel: boolean;
  /** Keys present in the file that this server does not know (logged at start-up, not fatal). */
  readonly unknownKeys: readonly string[];
  /** EndpointName / VariantName dimensions; null = not known, the dimension is left out. */
  readonly metricsEndpointName: string | null;
  readonly metricsVariantName: string | null;
  /** Publish request and lifecycle metrics per model too (ModelName dimension, Prometheus label). */
  readonly metricsPerModel: boolean;
  /** CloudWatch namespace of the CloudWatch and EMF sinks. */
  readonly metricsNamespace: string;
  readonly metricsCloudwatch: boolean;
  /** null = the AWS SDK's default region chain. */
  readonly metricsCloudwatchRegion: string | null;
  /** null = the region's public endpoint. */
  readonly metricsCloudwatchEndpoint: string | null;
  /** Data points kept while CloudWatch is unreachable before the oldest are dropped. */
  readonly metricsCloudwatchMaxBuffered: number;
  /** EMF destination: 'stdout' or a file path; null = off. */
  readonly metricsEmf: string | null;
  /** MMS metric-line destination: 'stdout' or a file path; null = off. */
  readonly metricsMmsLog: string | null;
  readonly metricsPrometheus: boolean;
  /** A separate listener for GET /metrics; null = the management listener serves it. */
  readonly metricsAddress: ListenAddress | null;
  /** Share of requests traced; 0 = tracing off. */
  readonly otelTracesSamplerRatio: number;
  /** OTLP/HTTP base URL (…/v1/traces is added); null = the exporter's OTEL_* environment variables. */
  readonly otelExporterOtlpEndpoint: string | null;
}

/** The autoscale_* keys, in milliseconds and counts. */
export interface AutoscaleConfig {
  readonly queueWaitMs: number;
  readonly backlogPerWorker: number;
  /** Share of its workers' time (0-1) a dedicated model's runs take past which it gets a worker more; 0 = never. */
  readonly busyShare: number;
  readonly idleMs: number;
  readonly cooldownMs: number;
  /**
   * Most workers a model is scaled up to (autoscale_cores over the threads each worker runs, at
   * least 1); 0 = no limit (number_of_gpu > 0).
   */
  readonly cpuWorkers: number;
}
