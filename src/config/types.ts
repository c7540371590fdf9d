/** The resolved, frozen configuration every other module reads. Built only by resolveConfig(). */
import type { TlsPaths } from '../util/tls-files';
import type { KeyKind, KeyName, KeyTable } from './keys';
import { kWorkerKeys } from './keys/workers';
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
  /** As written (after $$VAR$$ substitution; port rewritten by SAGEMAKER_BIND_TO_PORT), for logs. */
  readonly raw: string;
  readonly scheme: 'http' | 'https' | 'unix';
  /** '' for unix. */
  readonly host: string;
  /** 0 = ephemeral (tests), and for unix. */
  readonly port: number;
  /** '' for http(s). */
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
  readonly endpoint: ValueOf<'model_repository_endpoint'>;
  readonly ttlSeconds: ValueOf<'model_repository_ttl'>;
  readonly timeoutSeconds: ValueOf<'model_repository_timeout'>;
  readonly maxConcurrentDownloads: ValueOf<'max_concurrent_downloads'>;
  readonly cacheDir: string;
  readonly cacheDiskBytes: number;
}

/** dedicated: processes of the model's own; shared: a slot in a host process holding many models. */
export type WorkerMode = PlainConfig['workerMode'];

/** Whether client text names a mode: the one check for every door that reads one (the key table lists them). */
export function isWorkerMode(v: unknown): v is WorkerMode {
  return (kWorkerKeys.worker_mode.values as readonly unknown[]).includes(v);
}

/**
 * The keys read as they are (PlainConfig), and what the resolvers make of the others: several keys
 * or sources at once, or a value checked against the rest.
 */
export interface ServerConfig extends PlainConfig {
  /** null = built-in defaults. */
  readonly configFile: string | null;
  readonly inferenceAddress: ValueOf<'inference_address'>;
  readonly managementAddress: ValueOf<'management_address'>;
  /** Both addresses are equal: one listener serves both APIs (the SageMaker port). */
  readonly sharedListener: boolean;
  /** null = no store: models load by url only (modelStoreNote says why). */
  readonly modelStore: string | null;
  /** The start log's line saying where models are looked for. */
  readonly modelStoreNote: string;
  readonly loadModels: ValueOf<'load_models'>;
  /** default_workers_per_model with 0 resolved as MMS's getDefaultWorkers. */
  readonly workersPerModel: number;
  /** Per-request deadline (already converted from MMS's minutes key if that was used). */
  readonly responseTimeoutSeconds: number;
  /** max_request_size, or SAGEMAKER_MAX_PAYLOAD_IN_MB in bytes. */
  readonly maxRequestSize: ValueOf<'max_request_size'>;
  /** model_cache with auto resolved. */
  readonly modelCache: boolean;
  /** Directories a load url must resolve into (relative ones against the working directory). */
  readonly modelRoots: readonly string[];
  /** Empty = the data plane needs no token. */
  readonly inferenceTokens: readonly string[];
  /** null = no TLS. */
  readonly tls: TlsPaths | null;
  /** shared_workers with 0 resolved to the CPU count. */
  readonly sharedWorkers: ValueOf<'shared_workers'>;
  /** null = off (autoscale, its auto resolved). */
  readonly autoscale: AutoscaleConfig | null;
  /** null = no model_repository: on-demand loads read model_store only. */
  readonly repository: RepositoryConfig | null;
  /** SAGEMAKER_MULTI_MODEL=true. */
  readonly multiModel: boolean;
  /** Keys in the file that this server does not know (with allow_unknown_keys, logged at start-up). */
  readonly unknownKeys: readonly string[];
  readonly metricsNamespace: ValueOf<'metrics_namespace'>;
  /** 'stdout' or a file path; null = off. */
  readonly metricsEmf: string | null;
  /** 'stdout' or a file path; null = off. */
  readonly metricsMmsLog: string | null;
  /** null = the management listener serves GET /metrics. */
  readonly metricsAddress: ValueOf<'metrics_address'>;
}

/** The autoscale_* keys, in milliseconds and counts. */
export interface AutoscaleConfig {
  readonly queueWaitMs: number;
  readonly backlogPerWorker: ValueOf<'autoscale_backlog_per_worker'>;
  /** 0 = never. */
  readonly busyShare: ValueOf<'autoscale_busy_share'>;
  readonly idleMs: number;
  readonly cooldownMs: number;
  /** Most workers a model scales to (autoscale_cores over each one's threads, at least 1); 0 = no limit (GPUs). */
  readonly cpuWorkers: number;
}
