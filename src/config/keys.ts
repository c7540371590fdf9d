/**
 * Every config.properties key this server understands: the single source for validation
 * (resolve.ts reads each key through its kind and range) and for the config table in docs/configuration.md
 * (renderKeysMarkdown). Defaults are written as they would be in the file, so they go through the
 * same parser as user values.
 */

import { timerLimit } from '../util/timer-limit';
import { nearestName } from '../util/nearest-name';

export type KeyKind = 'string' | 'int' | 'number' | 'bool' | 'address' | 'list' | 'regex';

/** Allowed numeric values, with the wording used in error messages ("a whole number >= 1"). */
export interface Range {
  readonly allows: (n: number) => boolean;
  readonly text: string;
}

export interface KeySpec {
  readonly name: string;
  readonly kind: KeyKind;
  /** As written in a file; null = unset. */
  readonly default: string | null;
  /** For int/number keys. */
  readonly range?: Range;
  /** Shown in error messages when the default is not a useful example. */
  readonly example?: string;
  readonly doc: string;
}

const atLeast = (min: number): Range => ({ allows: (n) => n >= min, text: `>= ${min}` });
const between = (min: number, max: number): Range => ({
  allows: (n) => n >= min && n <= max,
  text: `${min} to ${max}`,
});
/** A duration in `unit`s: at least `min` (more than, when `above`), and no longer than a timer can wait. */
function duration(min: number, unitMs: number, unit: string, above = false): Range {
  const limit = timerLimit(unitMs, unit);
  return {
    allows: (n) => (above ? n > min : n >= min) && n <= limit.max,
    text: `${above ? '>' : '>='} ${min} and <= ${limit.text}`,
  };
}
const seconds = (min: number): Range => duration(min, 1000, 'seconds');
const secondsAboveZero = duration(0, 1000, 'seconds', true);
/**
 * The largest body either way: one Buffer, and a batch's frame (several of them) must stay within
 * what the frame protocol's u32 lengths and a worker's read buffer can hold.
 */
export const MAX_BODY_BYTES = 1024 * 1024 * 1024;
const bodyBytes: Range = { allows: (n) => n >= 1 && n <= MAX_BODY_BYTES, text: `1 to ${MAX_BODY_BYTES} (1 GiB)` };

export const KEYS = [
  {
    name: 'inference_address',
    kind: 'address',
    default: 'http://127.0.0.1:8080',
    doc: 'Where the inference API (/ping, /invocations, /models/{name}/invoke) listens: http://host:port, https://host[:port] or unix:/path. SageMaker needs http://0.0.0.0:8080 (SAGEMAKER_BIND_TO_PORT replaces the port).',
  },
  {
    name: 'management_address',
    kind: 'address',
    default: 'http://127.0.0.1:8081',
    doc: 'Where the management API (POST/GET/DELETE /models) listens. Set it equal to inference_address to serve both APIs on one port, as the SageMaker MME contract requires.',
  },
  {
    name: 'model_store',
    kind: 'string',
    default: null,
    example: '/opt/ml/models',
    doc: 'Directory that model urls are resolved against and that load_models=ALL scans; SageMaker MME images usually set /opt/ml/models.',
  },
  {
    name: 'load_models',
    kind: 'list',
    default: null,
    example: 'resnet=/opt/ml/models/resnet,bert.tar.gz',
    doc: 'Models to load at start-up: ALL (every model directory / .tar.gz in model_store) or a comma list of [name=]url; the name defaults to the url base name without .tar.gz/.tgz. Unset for SageMaker MME, which loads models through the API.',
  },
  {
    name: 'default_workers_per_model',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    doc: 'Worker processes per model when a load request names none. 0 = number_of_gpu if > 0, else one per CPU this server may use (its CPU affinity, lowered by a cgroup cpu.max quota: the CPU limit of a container, as the JVM of MMS counts). Lower it when many models share one instance.',
  },
  {
    name: 'job_queue_size',
    kind: 'int',
    default: '100',
    range: atLeast(1),
    doc: 'Requests that may wait per model before new ones get 503. Raise it for bursty traffic on slow models.',
  },
  {
    name: 'preload_model',
    kind: 'bool',
    default: 'false',
    doc: 'true = one process per model holds the ONNX session (weights in memory once) and runs up to default_workers_per_model batches concurrently; false = every worker is its own process with its own copy (parallel CPU, N× memory). Node cannot fork after loading as MMS does.',
  },
  {
    name: 'default_response_timeout',
    kind: 'int',
    default: '120',
    range: duration(1, 60_000, 'minutes'),
    doc: 'MMS-compatible request deadline in MINUTES (an MMS quirk: 120 = 7200 s). Applies only when written in the file or env and default_response_timeout_seconds is unset; prefer default_response_timeout_seconds.',
  },
  {
    name: 'default_response_timeout_seconds',
    kind: 'number',
    default: '-1',
    example: '60',
    range: {
      allows: (n) => n !== 0 && n <= timerLimit(1000, '').max,
      text: `> 0 and <= ${timerLimit(1000, 'seconds').text}, or negative for unset`,
    },
    doc: "Request deadline in seconds (preferred over default_response_timeout, which it overrides when set); negative = unset, as MMS's -1. With neither key set the deadline is 60 s, SageMaker's own invoke limit.",
  },
  {
    name: 'max_request_timeout',
    kind: 'number',
    default: '0',
    range: seconds(0),
    doc: "Longest deadline in SECONDS a caller may ask for (X-Request-Timeout, OIP parameters.timeout, gRPC grpc-timeout): a longer one is cut to it. 0 = no cap but the model's response timeout, which bounds every request.",
  },
  {
    name: 'priority_levels',
    kind: 'int',
    default: '1',
    range: between(1, 32),
    doc: "Priority levels a caller may choose from (OIP parameters.priority, X-Request-Priority, as Triton's: 1 goes first, 0 or none = the middle level, ceil(levels / 2)); values outside are 400. 1 = off: every model's queue is first in, first out.",
  },
  {
    name: 'priority_aging_ms',
    kind: 'int',
    default: '1000',
    range: duration(1, 1, 'milliseconds'),
    doc: 'Milliseconds of waiting that raise a queued request by one priority level, so that low priority never starves: a request is never passed by one that arrived (its level + 1) × priority_aging_ms after it.',
  },
  {
    name: 'model_load_timeout',
    kind: 'number',
    default: '120',
    range: secondsAboveZero,
    doc: 'Seconds one worker may take to load a model before the load fails. Raise it for very large models (SageMaker waits up to 360 s for a load).',
  },
  {
    name: 'unregister_model_timeout',
    kind: 'number',
    default: '120',
    range: secondsAboveZero,
    doc: "Seconds an unload may take in all: waiting for a load in progress, draining admitted requests, and the workers' exit. Past it the model is unloaded anyway (running requests get 503, workers are killed) and the answer is 408.",
  },
  {
    name: 'max_request_size',
    kind: 'int',
    default: '6553500',
    range: bodyBytes,
    doc: 'Largest request body in bytes (larger gets 413), at most 1 GiB. SAGEMAKER_MAX_PAYLOAD_IN_MB overrides it.',
  },
  {
    name: 'max_request_elements',
    kind: 'int',
    default: '8388608',
    range: atLeast(1),
    doc: 'Most tensor elements one request may decode into, over all its inputs (more gets 400, before any tensor is allocated). Every element also needs at least one byte of body, so the default binds only once max_request_size is raised above 8 MiB.',
  },
  {
    name: 'max_response_size',
    kind: 'int',
    default: '6553500',
    range: bodyBytes,
    doc: 'Largest response a worker may return, in bytes (larger fails the request with 500), at most 1 GiB.',
  },
  {
    name: 'max_stream_buffer',
    kind: 'int',
    default: '8388608',
    range: atLeast(65536),
    doc: 'Bytes of one streamed response that may be on their way to a slow client. A streaming handler awaits context.drained(i) between chunks to wait for it; one that sends past it fails that request with a message saying so.',
  },
  {
    name: 'access_log',
    kind: 'bool',
    default: 'false',
    doc: "true = one line per request in the server log, as MMS's access log: client address, method and path, status, milliseconds and the x-request-id.",
  },
  {
    name: 'log_format',
    kind: 'string',
    default: 'text',
    example: 'json',
    doc: "text = one line per event: ISO time, level, message; json = one JSON object per line (ts, level, msg, and model, requestId, worker, pid where the event has them) for log collectors. Worker processes' output goes through the same log in either format.",
  },
  {
    name: 'log_level',
    kind: 'string',
    default: 'info',
    example: 'warn',
    doc: 'Least severe level written: info (everything: start-up, loads, evictions, access log, client errors), warn (workers restarted or killed, timeouts, dropped metrics) or error (failed loads, server faults, 5xx answers).',
  },
  {
    name: 'decode_input_request',
    kind: 'bool',
    default: 'true',
    doc: 'true = handlers get application/json bodies parsed and text/* bodies as strings; false = raw bytes (what the SageMaker MMS configs use).',
  },
  {
    name: 'number_of_gpu',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    doc: 'GPUs to use, taken as configured (this server does not probe nvidia-smi). Only affects the worker count when default_workers_per_model=0.',
  },
  {
    name: 'metric_time_interval',
    kind: 'int',
    default: '60',
    range: seconds(1),
    doc: 'Seconds between system metric collections (CPU, memory, disk).',
  },
  {
    name: 'batch_size',
    kind: 'int',
    default: '1',
    range: atLeast(1),
    doc: 'Default per-model batch size: requests a worker receives at once. Raise it for models that batch efficiently.',
  },
  {
    name: 'max_batch_delay',
    kind: 'int',
    default: '100',
    range: duration(0, 1, 'ms'),
    doc: 'Default per-model milliseconds to wait for a batch to fill before sending what has arrived.',
  },
  {
    name: 'default_service_handler',
    kind: 'string',
    default: null,
    example: '/opt/ml/code/handler.js',
    doc: 'Handler used when a model directory does not name one.',
  },
  {
    name: 'blacklist_env_vars',
    kind: 'regex',
    default: null,
    example: 'AWS_.*',
    doc: 'Regular expression of environment variable names not passed to workers; it must match the whole name, as in MMS (e.g. AWS_.*).',
  },
  {
    name: 'enable_envvars_config',
    kind: 'bool',
    default: 'false',
    doc: 'true = environment variables MMS_<KEY> (e.g. MMS_JOB_QUEUE_SIZE) override the file and the command line. Only read from the file.',
  },
  {
    name: 'onnx_intra_op_threads',
    kind: 'int',
    default: '1',
    range: atLeast(0),
    doc: 'onnxruntime threads inside one operator, per worker. 1 keeps N models from starting N x cores threads; 0 = onnxruntime default (one per core).',
  },
  {
    name: 'onnx_inter_op_threads',
    kind: 'int',
    default: '1',
    range: atLeast(0),
    doc: 'onnxruntime threads running independent operators in parallel, per worker; 0 = onnxruntime default.',
  },
  {
    name: 'onnx_graph_optimization_level',
    kind: 'string',
    default: 'all',
    example: 'basic',
    doc: "onnxruntime's graph optimizations when a session is created: all, extended, basic or disabled. basic keeps constant folding and the simple fusions and skips the extended ones (Gemm with its activation, GELU, LayerNorm, attention) and the layout ones, which keep memory in every session: a tiny MLP's session costs 57 KiB loaded instead of 87 KiB. For thousands of small models in shared hosts; transformer models run slower without the fusions.",
  },
  {
    name: 'model_cache',
    kind: 'string',
    default: 'auto',
    example: 'on',
    doc: 'Self-managed model cache: on = load models from model_store on first invoke and evict by eviction_policy when max_loaded_models or the memory budget is reached; off = only explicit loads (SageMaker decides what to unload); auto = off when SAGEMAKER_MULTI_MODEL=true, on elsewhere.',
  },
  {
    name: 'max_loaded_models',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    doc: 'Most models loaded at once (Ray Serve max_num_models_per_replica); 0 = no count limit, only the memory budget.',
  },
  {
    name: 'model_memory_budget_mb',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    doc: 'Memory all workers together may use, in MiB; a load that would not fit answers 507 (or evicts, with model_cache on). 0 = the container memory limit (cgroup v2/v1) or the machine memory, minus model_memory_reserve_mb.',
  },
  {
    name: 'model_memory_reserve_mb',
    kind: 'int',
    default: '512',
    range: atLeast(0),
    doc: 'MiB kept free for the server process itself, the page cache and request buffers when the budget is derived from the memory limit.',
  },
  {
    name: 'max_concurrent_loads',
    kind: 'int',
    default: '4',
    range: atLeast(1),
    doc: 'Loads of different models that may run at the same time; more wait their turn.',
  },
  {
    name: 'load_wait_timeout',
    kind: 'number',
    default: '30',
    range: secondsAboveZero,
    doc: 'Seconds an invoke waits for its model to load on demand (jittered between t and 2t against thundering herds) before 503 with Retry-After; the load itself goes on.',
  },
  {
    name: 'load_failure_cache_seconds',
    kind: 'number',
    default: '60',
    range: atLeast(0),
    doc: 'Seconds a model whose on-demand load failed is not retried; invokes get the original error at once. 0 = retry on every request.',
  },
  {
    name: 'model_repository',
    kind: 'string',
    default: null,
    example: 's3://my-bucket/models',
    doc: "Self-managed mode only: s3://bucket[/prefix] that an on-demand load of model X reads when X is not in model_store: <prefix>/X/ (a model directory), else <prefix>/X.tar.gz or X.tgz, downloaded into the disk cache (model_cache_dir). Credentials, region and endpoint come from the AWS SDK's default chain (env, IRSA / web identity, instance profile). Refused with SAGEMAKER_MULTI_MODEL=true, where the platform downloads. See docs/model-repository.md.",
  },
  {
    name: 'model_repository_endpoint',
    kind: 'string',
    default: null,
    example: 'http://minio:9000',
    doc: 'Endpoint URL of an S3-compatible store (MinIO, Ceph, R2), addressed path-style; unset = AWS S3 (or AWS_ENDPOINT_URL_S3).',
  },
  {
    name: 'model_repository_ttl',
    kind: 'number',
    default: '300',
    range: atLeast(0),
    doc: 'Seconds a model in the disk cache is used without asking the repository whether it changed; after that its next load revalidates it (If-None-Match, or a listing for a directory) and downloads it again if it did. A loaded model keeps serving until it is unloaded. 0 = revalidate on every load.',
  },
  {
    name: 'model_repository_timeout',
    kind: 'number',
    default: '30',
    range: secondsAboveZero,
    doc: 'Seconds the repository may stay silent (no answer, or no bytes of a download in progress) before the load fails with 504.',
  },
  {
    name: 'max_concurrent_downloads',
    kind: 'int',
    default: '2',
    range: atLeast(1),
    doc: 'Repository downloads that may run at once; more wait their turn. Each streams to disk, so memory does not grow with model size.',
  },
  {
    name: 'model_cache_dir',
    kind: 'string',
    default: null,
    example: '/var/cache/mme-models',
    doc: 'Disk cache of models downloaded from model_repository; survives restarts (a half-finished download never does). Unset = mme-model-cache under the temp directory.',
  },
  {
    name: 'model_cache_disk_mb',
    kind: 'int',
    default: '10240',
    range: atLeast(1),
    doc: "MiB the disk cache may hold; a download that needs room evicts the least recently used models that are not loaded (independently of memory eviction). Keep it below the volume's size limit (the emptyDir sizeLimit in deploy/k8s).",
  },
  {
    name: 'eviction_policy',
    kind: 'string',
    default: 'gdsf',
    example: 'lru',
    doc: 'Which loaded model to evict first when room is needed: gdsf (GreedyDual-Size-Frequency: weighs use frequency and load time against memory) or lru (least recently used). See the simulator table in docs/cache.md.',
  },
  {
    name: 'eviction_drain_timeout',
    kind: 'number',
    default: '10',
    range: seconds(0),
    doc: 'Seconds an evicted model may take to finish its queued and running requests before its workers are stopped.',
  },
  {
    name: 'spare_workers',
    kind: 'int',
    default: '1',
    range: atLeast(0),
    doc: 'Worker processes kept started (Node and onnxruntime initialised) with no model, so a load skips process start-up: cold start drops from ~150-300 ms to tens of ms. Each costs ~35 MB. Kept for dedicated loads, and in worker_mode=shared while autoscale may promote a hot model (autoscale on, shared_host_heavy_share > 0). 0 = none.',
  },
  {
    name: 'body_handoff_bytes',
    kind: 'int',
    default: '16777216',
    range: between(0, MAX_BODY_BYTES),
    doc: "Size in bytes of each worker process's body ring: a file in shared memory (body_handoff_dir) that large request bodies reach the worker through, instead of the worker's socket. A ring keeps the pages its most bodies in flight at once needed, up to this size: size /dev/shm for one full ring per worker process to be safe (docs/deploy.md). A body larger than the ring, or one that finds it full, goes over the socket. 0 = off.",
  },
  {
    name: 'body_handoff_dir',
    kind: 'string',
    default: null,
    example: '/dev/shm',
    doc: 'Directory of the body rings (body_handoff_bytes), on tmpfs. Unset = /dev/shm, else $TMPDIR when it is a tmpfs; where neither is usable (missing, read-only, less free than two rings) bodies go over the sockets and the server says so once at start. The rings are unlinked as soon as their worker holds them: nothing stays in the directory, whatever way the server or a worker ends.',
  },
  {
    name: 'body_handoff_min_bytes',
    kind: 'int',
    default: '65536',
    range: between(1, MAX_BODY_BYTES),
    doc: "Smallest request body that goes through the body ring (body_handoff_bytes); smaller ones travel in the worker's frame, where a copy costs less than the ring's write and read.",
  },
  {
    name: 'worker_mode',
    kind: 'string',
    default: 'dedicated',
    example: 'shared',
    doc: 'Where a model runs when its load request and model-config.json do not say: dedicated = worker processes of its own (isolation: a crash, a hang or a leak touches that model alone; ~17 MB PSS and a process start per model); shared = a slot in one of shared_workers host processes that hold many models each (~0.13 MB a tiny model, loads in ~3 ms; one host\'s fault touches every model in it). A model\'s model-config.json can insist on "workerMode": "dedicated".',
  },
  {
    name: 'shared_workers',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    doc: 'Host processes for worker_mode=shared models, started with the first such model. 0 = one per CPU this server may use (affinity and cgroup quota, as default_workers_per_model). A host computes one session run at a time (its models take turns), so more hosts means more models computing at once.',
  },
  {
    name: 'max_models_per_worker',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    doc: "Most models one shared host holds (Ray Serve's max_num_models_per_replica). 0 = no cap: the memory budget decides. A load that finds every host full gets 503.",
  },
  {
    name: 'shared_host_heavy_share',
    kind: 'number',
    default: '0.5',
    range: between(0, 1),
    doc: "Share of a shared host's thread (0-1, measured every 2 s) past which a model is heavy: its host takes no new model while it is, and the neighbours that ran beside it move to a host without a heavy model (started there before they leave, so no request is lost). With autoscale on, a model over it at two 0.5 s rounds in a row (measured over 1 s) is promoted to processes of its own, and demoted back once under half of it for autoscale_idle_seconds. 0 = never move, never promote.",
  },
  {
    name: 'autoscale',
    kind: 'string',
    default: 'auto',
    example: 'on',
    doc: "Per-model worker autoscaling between a model's min_worker and max_worker (PUT /models/{name}?min_worker=1&max_worker=4, or minWorkers/maxWorkers in model-config.json; with max_worker = min_worker nothing changes): on = one worker more when its queue wait, backlog or busy share passes autoscale_queue_wait_ms / autoscale_backlog_per_worker / autoscale_busy_share, if the memory budget has room (never a 507, never an eviction of a busy model), one less after autoscale_idle_seconds quiet; off = workers stay as loaded or scaled; auto = off when SAGEMAKER_MULTI_MODEL=true (SageMaker scales instances and routes by model itself, and the endpoint's memory is its to plan), on elsewhere. Not preload_model models. A worker_mode=shared model is not scaled in its host: past shared_host_heavy_share it is promoted to processes of its own (then scaled), and demoted back once cool (docs/workers.md).",
  },
  {
    name: 'autoscale_queue_wait_ms',
    kind: 'int',
    default: '100',
    range: atLeast(1),
    doc: "Median time a model's requests waited in its queue over the last 2 s past which it gets one more worker (autoscale).",
  },
  {
    name: 'autoscale_backlog_per_worker',
    kind: 'number',
    default: '4',
    range: { allows: (n) => n > 0, text: '> 0' },
    doc: "Requests waiting in a model's queue per worker past which it gets one more worker (autoscale), whatever their wait so far: a burst is seen before its waits are.",
  },
  {
    name: 'autoscale_busy_share',
    kind: 'number',
    default: '0.8',
    range: between(0, 1),
    doc: "Share of its workers' time (0-1, measured over the last 1 s) a model's session runs take past which it gets one more worker (autoscale), at two 0.5 s rounds in a row: a saturated worker takes each request as it comes, so nothing waits in the server's queue for the other two rules to see. A worker goes only once the runs would take under half of it with one worker fewer. 0 = queue wait and backlog only.",
  },
  {
    name: 'autoscale_cores',
    kind: 'int',
    default: '0',
    range: atLeast(0),
    example: '8',
    doc: "CPUs autoscale plans a model's workers on: it adds a worker only while the model's workers, each running onnx_intra_op_threads threads (0 = one per core), fit in them. A CPU-bound worker beyond the cores adds no throughput: it takes turns with the others, its runs take longer, its busy share reads higher, and every model beside it waits for a core. 0 = the CPUs this server may use (its CPU affinity, lowered by a cgroup cpu.max quota, as in a container with a CPU limit). Raise it for handlers that wait on I/O rather than compute; no limit with number_of_gpu > 0 (the GPU runs the model). min_worker and PUT /models/{name}?min_worker=N are not limited.",
  },
  {
    name: 'autoscale_idle_seconds',
    kind: 'int',
    default: '60',
    range: seconds(1),
    doc: 'Seconds a model above min_worker stays quiet (nothing queued, median queue wait under a quarter of autoscale_queue_wait_ms) before one worker goes (autoscale); each further one waits as long again.',
  },
  {
    name: 'autoscale_cooldown_seconds',
    kind: 'int',
    default: '3',
    range: seconds(0),
    doc: "Seconds after a model's worker count changed (or a scale-up was skipped for memory) before autoscale changes it again: the new worker gets time to load and drain the queue before the queue is judged again.",
  },
  {
    name: 'shared_worker_recycle_mb',
    kind: 'int',
    default: '256',
    range: atLeast(0),
    doc: 'Memory a shared host may keep after unloads (freed sessions that onnxruntime and the allocator do not give back), MB, before it is recycled: a new host starts, the models move to it, the old one exits. This much per host is outside the model memory budget. 0 = never recycle.',
  },
  {
    name: 'shutdown_timeout',
    kind: 'number',
    default: '20',
    range: seconds(0),
    doc: 'On SIGTERM, seconds to let admitted requests finish before every worker is stopped; SageMaker sends SIGKILL 30 s after SIGTERM.',
  },
  {
    name: 'metrics_endpoint_name',
    kind: 'string',
    default: null,
    example: 'my-endpoint',
    doc: "EndpointName dimension on every metric (CloudWatch, EMF). SageMaker does not tell the container its endpoint name, so pass it in the model's Environment and write metrics_endpoint_name=$$ENDPOINT_NAME$$; unset = no EndpointName dimension.",
  },
  {
    name: 'metrics_variant_name',
    kind: 'string',
    default: null,
    example: 'AllTraffic',
    doc: 'VariantName dimension on every metric, like metrics_endpoint_name; unset = no VariantName dimension.',
  },
  {
    name: 'metrics_per_model_dimension',
    kind: 'bool',
    default: 'false',
    doc: 'true = request and model-lifecycle metrics are also published per model (ModelName dimension, Prometheus label model). CloudWatch bills every metric and dimension value, so turn it on only with a few models.',
  },
  {
    name: 'metrics_namespace',
    kind: 'string',
    default: 'SageMakerMME',
    example: 'MyCompany/MME',
    doc: 'CloudWatch namespace of the CloudWatch and EMF sinks (AWS/ namespaces are reserved for AWS). Change it to keep several deployments apart.',
  },
  {
    name: 'metrics_cloudwatch',
    kind: 'bool',
    default: 'false',
    doc: "true = send every metric interval to CloudWatch with PutMetricData, credentials from the AWS SDK's default chain (the SageMaker execution role needs cloudwatch:PutMetricData).",
  },
  {
    name: 'metrics_cloudwatch_region',
    kind: 'string',
    default: null,
    example: 'us-east-1',
    doc: "Region for PutMetricData; unset = the AWS SDK's default (AWS_REGION, then the shared config file).",
  },
  {
    name: 'metrics_cloudwatch_endpoint',
    kind: 'string',
    default: null,
    example: 'https://monitoring.us-east-1.amazonaws.com',
    doc: "CloudWatch endpoint URL override, for a VPC endpoint or a local CloudWatch stand-in; unset = the region's public endpoint.",
  },
  {
    name: 'metrics_cloudwatch_max_buffered',
    kind: 'int',
    default: '10000',
    range: atLeast(1),
    doc: 'Metric data points kept while CloudWatch is unreachable; beyond it the oldest are dropped and counted (mme_metrics_dropped_total). Raise it to ride out longer outages.',
  },
  {
    name: 'metrics_emf',
    kind: 'string',
    default: 'off',
    example: 'stdout',
    doc: 'CloudWatch Embedded Metric Format: off, stdout or a file path that gets one JSON object per line per metric interval. stdout suits SageMaker, whose container output goes to CloudWatch Logs.',
  },
  {
    name: 'metrics_mms_log',
    kind: 'string',
    default: 'off',
    example: 'stdout',
    doc: "MMS-style metric lines (CPUUtilization.Percent:12.5|#Level:Host|#hostname:h,timestamp:1700000000): off, stdout or a file path, one line per metric per interval, for tools that parse MMS's mms_metrics.log.",
  },
  {
    name: 'metrics_prometheus',
    kind: 'bool',
    default: 'true',
    doc: 'true = serve Prometheus text format at GET /metrics (on metrics_address, else on the management listener); false = no /metrics and no per-request histogram updates.',
  },
  {
    name: 'metrics_address',
    kind: 'string',
    default: null,
    example: 'http://0.0.0.0:9100',
    doc: 'A separate listener for GET /metrics (http://host:port or unix:/path); unset = /metrics is on the management listener. Use it to scrape without exposing the management API.',
  },
  {
    name: 'otel_traces_sampler_ratio',
    kind: 'number',
    default: '0',
    example: '0.01',
    range: between(0, 1),
    doc: "OpenTelemetry traces: the share of requests traced (0 to 1), one server span each with its queue, load, run and encode spans (docs/tracing.md). A request with a W3C traceparent follows its caller's sampling decision. 0 = off: the OpenTelemetry SDK is not even loaded.",
  },
  {
    name: 'otel_exporter_otlp_endpoint',
    kind: 'string',
    default: null,
    example: 'http://otel-collector:4318',
    doc: 'Where traces go, OTLP/HTTP protobuf: the base URL to which /v1/traces is added, as OTEL_EXPORTER_OTLP_ENDPOINT. Unset = the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT environment variable, else http://localhost:4318.',
  },
  {
    name: 'model_roots',
    kind: 'string',
    default: null,
    example: '/opt/ml/models,/data/models',
    doc: 'Comma list of directories a load url must resolve into (after following links); anything else is refused with 400 before a file is read. Unset = model_store and /opt/ml/models. Relative urls resolve against model_store.',
  },
  {
    name: 'management_token',
    kind: 'string',
    default: null,
    example: '$$MME_MANAGEMENT_TOKEN$$',
    doc: 'When set, the management API (POST/PUT/DELETE/GET /models) needs Authorization: Bearer <token>. Leave unset on SageMaker, whose platform sends no token; use it when the management port is reachable by others.',
  },
  {
    name: 'inference_token',
    kind: 'string',
    default: null,
    example: '$$MME_INFERENCE_TOKEN$$',
    doc: 'When set, the data plane (every invoke path, /v2 metadata and infer, gRPC but its health calls) needs Authorization: Bearer <token> (gRPC: authorization metadata); /ping and the health checks stay open. A comma list allows several tokens, so one can be rotated. Refused with SAGEMAKER_MULTI_MODEL=true, whose platform sends none.',
  },
  {
    name: 'tls_cert_file',
    kind: 'string',
    default: null,
    example: '/etc/mme/tls/tls.crt',
    doc: 'PEM certificate (chain) that every https:// listener (inference_address, management_address, metrics_address) and the gRPC listener serve, TLS 1.2 and up; with tls_key_file. An http:// inference_address is then refused as a likely mistake; management_address and metrics_address may stay http:// (e.g. on loopback). Both files are reloaded when they change (cert-manager rotation): new connections get the new certificate, open ones are kept.',
  },
  {
    name: 'tls_key_file',
    kind: 'string',
    default: null,
    example: '/etc/mme/tls/tls.key',
    doc: 'PEM private key of tls_cert_file, unencrypted; a missing, unreadable or mismatched key stops start-up.',
  },
  {
    name: 'tls_client_ca_file',
    kind: 'string',
    default: null,
    example: '/etc/mme/tls/ca.crt',
    doc: 'PEM CA certificate(s) for mutual TLS: every TLS listener then requires a client certificate signed by one of them. Unset = no client certificate asked for.',
  },
  {
    name: 'max_connections',
    kind: 'int',
    default: '1024',
    range: atLeast(1),
    doc: 'Most open client connections per listener, the gRPC one included; more are refused at once, which bounds file descriptors and memory.',
  },
  {
    name: 'grpc_inference_address',
    kind: 'string',
    default: '127.0.0.1',
    example: '0.0.0.0',
    doc: 'Host the gRPC inference listener (KServe GRPCInferenceService and TorchServe InferenceAPIsService, one port) binds to when grpc_inference_port is set. A loopback host serves only calls whose :authority is a loopback name; set 0.0.0.0 to serve other hosts.',
  },
  {
    name: 'grpc_inference_port',
    kind: 'string',
    default: null,
    example: '7070',
    doc: 'Port of the gRPC inference listener (TorchServe uses 7070; 0 = any free port); unset = no gRPC listener. max_request_size bounds each request message.',
  },
  {
    name: 'allow_unknown_keys',
    kind: 'bool',
    default: 'false',
    doc: 'false = a key this server does not know stops start-up, naming the key it probably meant; true = such keys are logged at start-up and otherwise ignored, for config.properties files shared with MMS or TorchServe (vmargs, number_of_netty_threads, ...).',
  },
] as const satisfies readonly KeySpec[];

export type KeyName = (typeof KEYS)[number]['name'];
export type KindOf<N extends KeyName> = Extract<(typeof KEYS)[number], { name: N }>['kind'];

const kByName: ReadonlyMap<string, KeySpec> = new Map(KEYS.map((k) => [k.name, k]));

export function keySpec(name: string): KeySpec | undefined {
  return kByName.get(name);
}

/** The known key nearest to `name` by edit distance, if it is close enough to be a typo of it. */
export function nearestKey(name: string): KeyName | null {
  return nearestName(
    name,
    KEYS.map((k) => k.name),
  );
}

/** The environment variable that overrides a key when enable_envvars_config=true (MMS naming). */
export function envOverrideName(key: KeyName): string {
  return `MMS_${key.toUpperCase()}`;
}

/** docs/configuration.md's config table (key | default | meaning). */
export function renderKeysMarkdown(): string {
  // Escaped so that MMS_<KEY> is not swallowed as an HTML tag and '|' does not split the cell.
  const escape = (doc: string) => doc.replace(/[<>|]/g, (c) => `\\${c}`);
  const rows = KEYS.map(
    (k) => `| \`${k.name}\` | ${k.default === null ? '(unset)' : `\`${k.default}\``} | ${escape(k.doc)} |`,
  );
  return ['| key | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
