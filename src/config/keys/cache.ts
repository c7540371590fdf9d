/** Models and the cache: where models are found, which load at start, and what may stay loaded. */
import { atLeast, int, list, MiB, num, oneOf, seconds, secondsAboveZero, str, type KeySpec } from './kinds';

export const kCacheKeys = {
  model_store: str('/opt/ml/models', '/data/models', {
    field: null,
    doc: 'Directory that model urls are resolved against, that invokes load models from by name (model_cache on) and that load_models=ALL scans. A directory you name (file, MMS_MODEL_STORE, --model-store) must exist; the default, /opt/ml/models (where SageMaker puts models), may be missing: the server then starts without a store, loads models by url through POST /models, and says so at start. Empty = no store.',
  }),
  load_models: list(null, 'resnet=/opt/ml/models/resnet,bert.tar.gz', {
    field: null,
    doc: 'Models to load at start-up: ALL (every model directory / .tar.gz in model_store) or a comma list of [name=]url; the name defaults to the url base name without .tar.gz/.tgz. Unset for SageMaker MME, which loads models through the API.',
  }),
  model_cache: oneOf(['auto', 'on', 'off'], 'auto', {
    field: null,
    doc: 'Self-managed model cache: on = load models from model_store on first invoke and evict by eviction_policy when max_loaded_models or the memory budget is reached; off = only explicit loads (SageMaker decides what to unload); auto = off when SAGEMAKER_MULTI_MODEL=true, on elsewhere.',
  }),
  max_loaded_models: int('0', atLeast(0), {
    doc: 'Most models loaded at once (Ray Serve max_num_models_per_replica); 0 = no count limit, only the memory budget.',
  }),
  model_memory_budget_mb: int('0', atLeast(0), {
    field: 'modelMemoryBudgetBytes',
    scale: MiB,
    doc: 'Memory all workers together may use, in MiB; a load that would not fit answers 507 (or evicts, with model_cache on). 0 = the container memory limit (cgroup v2/v1) or the machine memory, minus model_memory_reserve_mb.',
  }),
  model_memory_reserve_mb: int('512', atLeast(0), {
    field: 'modelMemoryReserveBytes',
    scale: MiB,
    doc: 'MiB kept free for the server process itself, the page cache and request buffers when the budget is derived from the memory limit.',
  }),
  max_concurrent_loads: int('4', atLeast(1), {
    doc: 'Loads of different models that may run at the same time; more wait their turn. Loads from model_repository take at most all but one of them (with 1, the one), so a slow store never keeps a local load waiting.',
  }),
  load_wait_timeout: num('30', secondsAboveZero, {
    field: 'loadWaitTimeoutSeconds',
    doc: 'Seconds an invoke waits for its model to load on demand (jittered between t and 2t against thundering herds) before 503 with Retry-After; the load itself goes on.',
  }),
  load_failure_cache_seconds: num('60', atLeast(0), {
    doc: 'Seconds a model whose on-demand load failed is not retried; invokes get the original error at once. 0 = retry on every request.',
  }),
  eviction_policy: oneOf(['gdsf', 'lru'], 'gdsf', {
    doc: 'Which loaded model to evict first when room is needed: gdsf (GreedyDual-Size-Frequency: weighs use frequency and load time against memory) or lru (least recently used). See the simulator table in docs/cache.md.',
  }),
  eviction_drain_timeout: num('10', seconds(0), {
    field: 'evictionDrainTimeoutSeconds',
    doc: 'Seconds an evicted model may take to finish its queued and running requests before its workers are stopped.',
  }),
  model_idle_unload_seconds: int('0', seconds(0), {
    doc: "Seconds a model may go without a request before it is unloaded (its next invoke loads it again); a model's own idle_unload_seconds wins. 0 = never. Needs model_cache on: on SageMaker the platform decides what stays loaded. Pinned models are never unloaded for idleness.",
  }),
} as const satisfies Record<string, KeySpec>;

/** Why idle unload is refused without the self-managed cache: nothing would load the model again. */
export function idleUnloadRefused(multiModel: boolean): string {
  return multiModel
    ? 'on SageMaker (SAGEMAKER_MULTI_MODEL=true) the platform decides which models stay loaded and unloads them itself, and an invoke of a model unloaded here would answer 404 until it loaded it again; leave idle unloading to SageMaker and remove the setting'
    : 'it needs the self-managed cache, which loads an unloaded model again on its next invoke; with model_cache=off nothing would, and that invoke would answer 404. Set model_cache=on, or remove the setting';
}
