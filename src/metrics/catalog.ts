/**
 * Every metric this server publishes, in one table that all sinks read: the CloudWatch name and
 * unit (SageMaker's own where SageMaker has the metric: reference §2), how one interval's samples
 * reduce to the single number EMF and MMS lines carry, and the Prometheus form.
 */

/** CloudWatch units used here (a subset of MetricDatum's StandardUnit). */
export type Unit = 'None' | 'Percent' | 'Bytes' | 'Megabytes' | 'Microseconds' | 'Seconds';

export interface MetricDef {
  /** Index into per-interval arrays (the hot path indexes, never looks up by name). */
  readonly id: number;
  readonly name: string;
  readonly unit: Unit;
  /**
   * What one number per interval means: 'sum' for counts (Invocations), 'avg' otherwise
   * (ModelCacheHit's average is the hit ratio). CloudWatch gets the full statistic set either way.
   */
  readonly reduce: 'sum' | 'avg';
  /** 'model' metrics also get a ModelName series when metrics_per_model_dimension is on. */
  readonly scope: 'host' | 'model';
  readonly prometheus: PrometheusForm;
  readonly help: string;
}

/**
 * counter: incremented by each sample; histogram: observes each sample, microseconds as seconds
 * (Prometheus base unit); gauge: set from the interval's value.
 */
export type PrometheusForm =
  | { readonly type: 'counter'; readonly name: string; readonly labels?: readonly string[] }
  | { readonly type: 'histogram'; readonly name: string; readonly buckets: readonly number[] }
  | { readonly type: 'gauge'; readonly name: string };

const kRequestSeconds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const kLoadSeconds = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const kIdleSeconds = [1, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600];
const kBatchSizes = [1, 2, 4, 8, 16, 32, 64, 128];

type Scope = MetricDef['scope'];
type Entry = { readonly help: string; readonly unit?: Unit; readonly labels?: readonly string[] };
type Def<N extends string> = Omit<MetricDef, 'id' | 'name'> & { readonly name: N };

const def = <const N extends string>(
  name: N,
  scope: Scope,
  unit: Unit,
  reduce: MetricDef['reduce'],
  prometheus: PrometheusForm,
  e: Entry,
): Def<N> => ({ name, unit, reduce, scope, prometheus, help: e.help });
/** A count of events: summed per interval, a Prometheus counter. */
const counter = <const N extends string>(name: N, scope: Scope, prometheus: string, e: Entry) =>
  def(name, scope, e.unit ?? 'None', 'sum', { type: 'counter', name: prometheus, labels: e.labels }, e);
/** 1 per hit, 0 per miss: the interval's average is the hit ratio, Prometheus counts the hits. */
const ratio = <const N extends string>(name: N, prometheus: string, e: Entry): Def<N> => ({
  ...counter(name, 'model', prometheus, e),
  reduce: 'avg',
});
const histogram = <const N extends string>(name: N, unit: Unit, prom: string, buckets: number[], e: Entry) =>
  def(name, 'model', unit, 'avg', { type: 'histogram', name: prom, buckets }, e);
const gauge = <const N extends string>(name: N, scope: Scope, unit: Unit, prom: string, e: Entry) =>
  def(name, scope, unit, 'avg', { type: 'gauge', name: prom }, e);

const defs = [
  counter('Invocations', 'model', 'mme_invocations_total', { help: 'Invoke requests answered, whatever the status.' }),
  counter('Invocation4XXErrors', 'model', 'mme_invocation_4xx_errors_total', {
    help: 'Invoke requests answered with a 4xx status (1 per such request, else 0: the average is the 4xx rate).',
  }),
  counter('Invocation5XXErrors', 'model', 'mme_invocation_5xx_errors_total', {
    help: 'Invoke requests answered with a 5xx status (1 per such request, else 0: the average is the 5xx rate).',
  }),
  ratio('ModelCacheHit', 'mme_model_cache_hits_total', {
    help: 'Invoke requests whose model was already loaded (1 per hit, 0 per miss, an invoke that waited for its load; a 404 is neither: the average is the hit ratio).',
  }),
  histogram('ModelLatency', 'Microseconds', 'mme_model_latency_seconds', kRequestSeconds, {
    help: 'Time the model (its worker) took to answer a request.',
  }),
  histogram('OverheadLatency', 'Microseconds', 'mme_overhead_latency_seconds', kRequestSeconds, {
    help: 'Request time outside the model: total minus ModelLatency and minus the on-demand load wait, which ModelLoadingWaitTime reports (HTTP, queueing, batching, transfer).',
  }),
  histogram('QueueTime', 'Microseconds', 'mme_queue_time_seconds', kRequestSeconds, {
    help: "Time a request waited in its model's job queue for a worker.",
  }),
  histogram('BatchSize', 'None', 'mme_batch_size', kBatchSizes, { help: 'Requests in the batch a request ran in.' }),
  histogram('ModelLoadingTime', 'Microseconds', 'mme_model_loading_time_seconds', kLoadSeconds, {
    help: 'Time a successful model load took (POST /models, or an on-demand load).',
  }),
  counter('ModelLoadFailures', 'model', 'mme_model_load_failures_total', { help: 'Model loads that failed.' }),
  histogram('ModelUnloadingTime', 'Microseconds', 'mme_model_unloading_time_seconds', kLoadSeconds, {
    help: 'Time a model unload took; the sample count is the number of unloads (high = thrashing).',
  }),
  histogram('ModelLoadingWaitTime', 'Microseconds', 'mme_model_loading_wait_time_seconds', kLoadSeconds, {
    help: 'Time an invoke request waited for its model to be loaded on demand.',
  }),
  counter('ModelEvictions', 'model', 'mme_model_evictions_total', {
    help: 'Models unloaded by the model cache to make room.',
  }),
  counter('ModelIdleUnloads', 'model', 'mme_model_idle_unloads_total', {
    help: 'Models unloaded after idle_unload_seconds (or model_idle_unload_seconds) without a request; the next invoke loads each again.',
  }),
  histogram('EvictedModelIdleTime', 'Seconds', 'mme_evicted_model_idle_seconds', kIdleSeconds, {
    help: 'How long an evicted model had been idle; short times mean the cache is too small for the working set.',
  }),
  counter('WorkerRestarts', 'model', 'mme_worker_restarts_total', {
    help: 'Worker processes started to replace one that died (crashed, killed, or hung past the response timeout).',
  }),
  counter('SharedHostRestarts', 'host', 'mme_shared_host_restarts_total', {
    help: 'Shared hosts (worker_mode=shared) started to replace one that died; every model in it reloaded elsewhere.',
  }),
  counter('SharedHostRunTime', 'model', 'mme_shared_host_run_seconds_total', {
    unit: 'Microseconds',
    help: "Time a shared-host model's session runs took on its host's one thread; over the interval's length, the share of the host it used (describe's cpuShare is the same since its load).",
  }),
  counter('SharedHostRecycles', 'host', 'mme_shared_host_recycles_total', {
    help: 'Shared hosts replaced because they kept more freed memory than shared_worker_recycle_mb.',
  }),
  counter('AutoscaleEvents', 'model', 'mme_autoscale_events_total', {
    labels: ['direction', 'reason'],
    help: 'Autoscale decisions (autoscale=on): a worker added (direction up, reason queue_wait, backlog or busy) or retired (down, idle), a heavy shared model promoted to processes of its own (up, promote) or demoted back into a shared host (down, demote), or a scale-up or move skipped because the memory budget had no room (no_memory) or its workers already fill the cores (no_cores, autoscale_cores), and a worker added that did not raise the requests the model completes, retired (down, no_gain), after which scale-ups are skipped (up, no_gain) for autoscale_idle_seconds. Prometheus labels them by direction and reason; the server log has each one with its figures.',
  }),
  counter('RepositoryDownloads', 'model', 'mme_repository_downloads_total', {
    help: 'Models downloaded from model_repository into the disk cache (first use, or changed in the repository).',
  }),
  counter('RepositoryDownloadBytes', 'model', 'mme_repository_download_bytes_total', {
    unit: 'Bytes',
    help: 'Bytes downloaded from model_repository.',
  }),
  histogram('ModelDownloadingTime', 'Microseconds', 'mme_model_downloading_time_seconds', kLoadSeconds, {
    help: "Time one model's download from model_repository took (part of its ModelLoadingTime); SageMaker's name for the download an MME does.",
  }),
  counter('RepositoryErrors', 'model', 'mme_repository_errors_total', {
    help: 'Fetches from model_repository that failed after retries (refused credentials, timeout, store errors, no disk room); a missing model is not counted.',
  }),
  ratio('ModelDiskCacheHit', 'mme_model_disk_cache_hits_total', {
    help: 'Loads from model_repository served by the disk cache without a download (1 per hit, 0 per download: the average is the disk cache hit ratio).',
  }),
  counter('UnauthorizedRequests', 'host', 'mme_unauthorized_requests_total', {
    help: 'Requests refused with 401 for a missing or wrong bearer token: inference_token on the data plane (HTTP and gRPC), management_token on the management API.',
  }),
  gauge('LoadedModelCount', 'host', 'None', 'mme_loaded_model_count', { help: 'Models loaded in this container.' }),
  gauge('ModelWorkers', 'model', 'None', 'mme_model_workers', {
    help: 'Worker processes a model runs toward (min_worker, or what autoscale set since): per model with metrics_per_model_dimension, the sum over models without.',
  }),
  gauge('CPUUtilization', 'host', 'Percent', 'mme_cpu_utilization_percent', {
    help: 'CPU used by the container (its cgroup; the machine outside one), summed over cores: 0-100 x cores, as SageMaker reports it.',
  }),
  gauge('MemoryUtilization', 'host', 'Percent', 'mme_memory_utilization_percent', {
    help: "Memory used, as a percentage of the container's limit (or of the machine's memory without one).",
  }),
  gauge('MemoryUsed', 'host', 'Megabytes', 'mme_memory_used_megabytes', {
    help: 'Memory used in MiB, page cache that can be reclaimed excluded.',
  }),
  gauge('MemoryAvailable', 'host', 'Megabytes', 'mme_memory_available_megabytes', {
    help: "Memory still available in MiB, up to the container's limit.",
  }),
  gauge('DiskUtilization', 'host', 'Percent', 'mme_disk_utilization_percent', {
    help: 'Space used on the filesystem holding model_store (/ when unset).',
  }),
];

type Name = (typeof defs)[number]['name'];

export const METRICS: readonly MetricDef[] = defs.map((d, id) => ({ ...d, id }));

/** Metric ids by name, so call sites read M.ModelLatency and still index arrays. */
export const M = Object.fromEntries(METRICS.map((d) => [d.name, d.id])) as Record<Name, number>;
