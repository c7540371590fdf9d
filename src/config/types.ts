/** The resolved, frozen configuration every other module reads. Built only by resolveConfig(). */
import type { KeyKind, KeyName, KeyTable } from './keys';
import type { LoadModels } from './load-models';

/** What each kind of key reads as, when set. */
export interface KindType {
  string: string;
  int: number;
  number: number;
  bool: boolean;
  address: ListenAddress;
  list: LoadModels;
  regex: RegExp;
  enum: string;
  url: string;
}

/** What reading a key gives: one of an enum's values, and null only where the key may be unset. */
export type ValueOf<N extends KeyName> =
  | (KeyTable[N] extends { values: readonly (infer V)[] } ? V : KindType[KeyTable[N]['kind'] & KeyKind])
  | (KeyTable[N]['default'] extends null ? (KeyTable[N]['kind'] extends 'list' ? never : null) : never);

type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;
type FieldOf<N extends KeyName> = KeyTable[N] extends { field: infer F } ? F : CamelCase<N>;

/** The ServerConfig fields that are a key's value as read (keys.fieldOf names them at run time). */
export type PlainConfig = { readonly [N in KeyName as FieldOf<N> extends string ? FieldOf<N> : never]: ValueOf<N> };

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

/** dedicated: processes of the model's own; shared: a slot in a host process holding many models. */
export type WorkerMode = PlainConfig['workerMode'];

/**
 * The keys read as they are (PlainConfig, derived from the key tables), and what the resolvers make
 * of the others: several keys or sources at once, or a value checked against the rest.
 */
export interface ServerConfig extends PlainConfig {
  /** Which file was read, or null when built-in defaults apply. */
  readonly configFile: string | null;
  readonly inferenceAddress: ListenAddress;
  readonly managementAddress: ListenAddress;
  /** True when both addresses are equal: one listener serves both APIs (the SageMaker port). */
  readonly sharedListener: boolean;
  /** null = no store: models load by url only (modelStoreNote says why). */
  readonly modelStore: string | null;
  /** The start log's line saying where models are looked for. */
  readonly modelStoreNote: string;
  /** 'ALL' = every model directory / .tar.gz in model_store; else an explicit list. */
  readonly loadModels: LoadModels;
  /** default_workers_per_model with 0 resolved as MMS's getDefaultWorkers: numberOfGpu if > 0, else the CPU count. */
  readonly workersPerModel: number;
  /** Per-request deadline, seconds (already converted from MMS's minutes key if that was used). */
  readonly responseTimeoutSeconds: number;
  /** max_request_size, or SAGEMAKER_MAX_PAYLOAD_IN_MB in bytes. */
  readonly maxRequestSize: number;
  /** The self-managed cache (on-demand loading and eviction) is on. */
  readonly modelCache: boolean;
  /** Directories a load url must resolve into (relative ones against the working directory). */
  readonly modelRoots: readonly string[];
  /** inference_token's tokens (any one is accepted); empty = the data plane needs none. */
  readonly inferenceTokens: readonly string[];
  /** The certificate of every https:// listener and of gRPC; null = no TLS. */
  readonly tls: TlsConfig | null;
  /** Host processes for shared-mode models (shared_workers, 0 resolved to the CPU count). */
  readonly sharedWorkers: number;
  /** Per-model worker autoscaling (autoscale, its auto resolved); null = off. */
  readonly autoscale: AutoscaleConfig | null;
  /** null = no model_repository: on-demand loads read model_store only. */
  readonly repository: RepositoryConfig | null;
  /** SAGEMAKER_MULTI_MODEL=true. */
  readonly multiModel: boolean;
  /** Keys present in the file that this server does not know (logged at start-up, not fatal). */
  readonly unknownKeys: readonly string[];
  /** CloudWatch namespace of the CloudWatch and EMF sinks. */
  readonly metricsNamespace: string;
  /** EMF destination: 'stdout' or a file path; null = off. */
  readonly metricsEmf: string | null;
  /** MMS metric-line destination: 'stdout' or a file path; null = off. */
  readonly metricsMmsLog: string | null;
  /** A separate listener for GET /metrics; null = the management listener serves it. */
  readonly metricsAddress: ListenAddress | null;
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
