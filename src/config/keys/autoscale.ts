/** Per-model worker autoscaling: when a model gets a worker more or one less. */
import { above, atLeast, between, int, num, oneOf, seconds, resolverRead, type KeySpec } from './kinds';

export const kAutoscaleKeys = resolverRead({
  autoscale: oneOf(['auto', 'on', 'off'], 'auto', {
    doc: "Per-model worker autoscaling between a model's min_worker and max_worker (PUT /models/{name}?min_worker=1&max_worker=4, or minWorkers/maxWorkers in model-config.json; with max_worker = min_worker nothing changes): on = one worker more when its queue wait, backlog or busy share passes autoscale_queue_wait_ms / autoscale_backlog_per_worker / autoscale_busy_share, if the memory budget has room (never a 507, never an eviction of a busy model), one less after autoscale_idle_seconds quiet; off = workers stay as loaded or scaled; auto = off when SAGEMAKER_MULTI_MODEL=true (SageMaker scales instances and routes by model itself, and the endpoint's memory is its to plan), on elsewhere. Not preload_model models. A worker_mode=shared model is not scaled in its host: past shared_host_heavy_share it is promoted to processes of its own (then scaled), and demoted back once cool (docs/workers.md).",
  }),
  autoscale_queue_wait_ms: int('100', atLeast(1), {
    doc: "Median time a model's requests waited in its queue over the last 2 s past which it gets one more worker (autoscale).",
  }),
  autoscale_backlog_per_worker: num('4', above(0), {
    doc: "Requests waiting in a model's queue per worker past which it gets one more worker (autoscale), whatever their wait so far: a burst is seen before its waits are.",
  }),
  autoscale_busy_share: num('0.8', between(0, 1), {
    doc: "Share of its workers' time (0-1, measured over the last 1 s) a model's session runs take past which it gets one more worker (autoscale), at two 0.5 s rounds in a row: a saturated worker takes each request as it comes, so nothing waits in the server's queue for the other two rules to see. A worker goes only once the runs would take under half of it with one worker fewer. 0 = queue wait and backlog only.",
  }),
  autoscale_cores: int('0', atLeast(0), {
    example: '8',
    doc: "CPUs autoscale plans a model's workers on: it adds a worker only while the model's workers, each running onnx_intra_op_threads threads (0 = one per core), fit in them. A CPU-bound worker beyond the cores adds no throughput: it takes turns with the others, its runs take longer, its busy share reads higher, and every model beside it waits for a core. 0 = the CPUs this server may use (its CPU affinity, lowered by a cgroup cpu.max quota, as in a container with a CPU limit). Raise it for handlers that wait on I/O rather than compute; no limit with number_of_gpu > 0 (the GPU runs the model). min_worker and PUT /models/{name}?min_worker=N are not limited.",
  }),
  autoscale_idle_seconds: int('60', seconds(1), {
    doc: 'Seconds a model above min_worker stays quiet (nothing queued, median queue wait under a quarter of autoscale_queue_wait_ms) before one worker goes (autoscale); each further one waits as long again.',
  }),
  autoscale_cooldown_seconds: int('3', seconds(0), {
    doc: "Seconds after a model's worker count changed (or a scale-up was skipped for memory) before autoscale changes it again: the new worker gets time to load and drain the queue before the queue is judged again.",
  }),
} as const satisfies Record<string, KeySpec>);
