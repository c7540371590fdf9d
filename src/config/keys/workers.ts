/** Workers: the processes that run a model's sessions, how many, and what they may take. */
import { kGraphOptimizationSettings } from '../../protocol/messages';
import {
  atLeast,
  between,
  bool,
  duration,
  int,
  MAX_BODY_BYTES,
  MiB,
  num,
  oneOf,
  secondsAboveZero,
  str,
  type KeySpec,
} from './kinds';

export const kWorkerKeys = {
  default_workers_per_model: int('0', atLeast(0), {
    doc: 'Worker processes per model when a load request names none. 0 = number_of_gpu if > 0, else one per CPU this server may use (its CPU affinity, lowered by a cgroup cpu.max quota: the CPU limit of a container, as the JVM of MMS counts). Lower it when many models share one instance.',
  }),
  job_queue_size: int('100', atLeast(1), {
    doc: 'Requests that may wait per model before new ones get 503. Raise it for bursty traffic on slow models.',
  }),
  preload_model: bool('false', {
    doc: 'true = one process per model holds the ONNX session (weights in memory once) and runs up to default_workers_per_model batches concurrently; false = every worker is its own process with its own copy (parallel CPU, N× memory). Node cannot fork after loading as MMS does.',
  }),
  model_load_timeout: num('120', secondsAboveZero, {
    field: 'modelLoadTimeoutSeconds',
    doc: 'Seconds one worker may take to load a model before the load fails. Raise it for very large models (SageMaker waits up to 360 s for a load).',
  }),
  unregister_model_timeout: num('120', secondsAboveZero, {
    field: 'unregisterModelTimeoutSeconds',
    doc: "Seconds an unload may take in all: waiting for a load in progress, draining admitted requests, and the workers' exit. Past it the model is unloaded anyway (running requests get 503, workers are killed) and the answer is 408.",
  }),
  number_of_gpu: int('0', atLeast(0), {
    doc: 'GPUs to use, taken as configured (this server does not probe nvidia-smi). Only affects the worker count when default_workers_per_model=0.',
  }),
  batch_size: int('1', atLeast(1), {
    field: 'defaultBatchSize',
    doc: 'Default per-model batch size: requests a worker receives at once. Raise it for models that batch efficiently.',
  }),
  max_batch_delay: int('100', duration(0, 1, 'ms'), {
    field: 'defaultMaxBatchDelayMs',
    doc: 'Default per-model milliseconds to wait for a batch to fill before sending what has arrived.',
  }),
  default_service_handler: str(null, '/opt/ml/code/handler.js', {
    doc: 'Handler used when a model directory does not name one.',
  }),
  onnx_intra_op_threads: int('1', atLeast(0), {
    field: 'intraOpThreads',
    doc: 'onnxruntime threads inside one operator, per worker. 1 keeps N models from starting N x cores threads; 0 = onnxruntime default (one per core).',
  }),
  onnx_inter_op_threads: int('1', atLeast(0), {
    field: 'interOpThreads',
    doc: 'onnxruntime threads running independent operators in parallel, per worker; 0 = onnxruntime default.',
  }),
  onnx_graph_optimization_level: oneOf(kGraphOptimizationSettings, 'auto', {
    field: 'graphOptimizationLevel',
    doc: "onnxruntime's graph optimizations when a session is created: auto, all, extended, basic or disabled. basic keeps constant folding and the simple fusions and skips the extended ones (Gemm with its activation, GELU, LayerNorm, attention) and the layout ones, which keep ~30 KiB in every session: a tiny MLP's session costs 58 KiB loaded instead of 89 KiB. auto = basic for a graph of at most 4 nodes and 1 MiB (nothing to fuse: 100 000 tiny shared models fit in 8 GiB), all for any other (many-node graphs run 1.2-1.6× faster fused); GET /models/{name} shows each worker's level.",
  }),
  spare_workers: int('1', atLeast(0), {
    doc: 'Worker processes kept started (Node and onnxruntime initialised) with no model, so a load skips process start-up: cold start drops from ~150-300 ms to tens of ms. Each costs ~35 MB. Kept for dedicated loads, and in worker_mode=shared while autoscale may promote a hot model (autoscale on, shared_host_heavy_share > 0). A model unloaded from a CPU process with no memory or CPU limit and the default handler gives its process back as the spare when one is wanted, so load/unload churn starts no process; a process that kept over 32 MiB of the model it unloaded is stopped instead. 0 = none.',
  }),
  body_handoff_bytes: int('16777216', between(0, MAX_BODY_BYTES), {
    doc: "Size in bytes of each worker process's body ring: a file in shared memory (body_handoff_dir) that large request bodies reach the worker through, instead of the worker's socket. A ring keeps the pages its most bodies in flight at once needed, up to this size: size /dev/shm for one full ring per worker process to be safe (docs/deploy.md). A body larger than the ring, or one that finds it full, goes over the socket. 0 = off.",
  }),
  body_handoff_dir: str(null, '/dev/shm', {
    doc: 'Directory of the body rings (body_handoff_bytes), on tmpfs. Unset = /dev/shm, else $TMPDIR when it is a tmpfs; where neither is usable (missing, read-only, less free than two rings) bodies go over the sockets and the server says so once at start. The rings are unlinked as soon as their worker holds them: nothing stays in the directory, whatever way the server or a worker ends.',
  }),
  body_handoff_min_bytes: int('65536', between(1, MAX_BODY_BYTES), {
    doc: "Smallest request body that goes through the body ring (body_handoff_bytes); smaller ones travel in the worker's frame, where a copy costs less than the ring's write and read.",
  }),
  worker_mode: oneOf(['dedicated', 'shared'], 'dedicated', {
    doc: 'Where a model runs when its load request and model-config.json do not say: dedicated = worker processes of its own (isolation: a crash, a hang or a leak touches that model alone; ~17 MB PSS and a process start per model); shared = a slot in one of shared_workers host processes that hold many models each (~0.13 MB a tiny model, loads in ~3 ms; one host\'s fault touches every model in it). A model\'s model-config.json can insist on "workerMode": "dedicated".',
  }),
  shared_workers: int('0', atLeast(0), {
    field: null,
    doc: 'Host processes for worker_mode=shared models, started with the first such model. 0 = one per CPU this server may use (affinity and cgroup quota, as default_workers_per_model). A host computes one session run at a time (its models take turns), so more hosts means more models computing at once.',
  }),
  max_models_per_worker: int('0', atLeast(0), {
    doc: "Most models one shared host holds (Ray Serve's max_num_models_per_replica). 0 = no cap: the memory budget decides. A load that finds every host full gets 503.",
  }),
  shared_host_heavy_share: num('0.5', between(0, 1), {
    doc: "Share of a shared host's thread (0-1, measured every 2 s) past which a model is heavy: its host takes no new model while it is, and the neighbours that ran beside it move to a host without a heavy model (started there before they leave, so no request is lost). With autoscale on, a model over it at two 0.5 s rounds in a row (measured over 1 s) is promoted to processes of its own, and demoted back once under half of it for autoscale_idle_seconds. 0 = never move, never promote.",
  }),
  shared_worker_recycle_mb: int('256', atLeast(0), {
    field: 'sharedWorkerRecycleBytes',
    scale: MiB,
    doc: 'Memory a shared host may keep after unloads (freed sessions that onnxruntime and the allocator do not give back), MB, before it is recycled: a new host starts, the models move to it, the old one exits. This much per host is outside the model memory budget. 0 = never recycle.',
  }),
} as const satisfies Record<string, KeySpec>;
