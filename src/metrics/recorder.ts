/**
 * The one object the server tells about events: the model manager's ManagerEvents
 * (`manager.events.sink = recorder`) and the gateway's invocation() for every door. Event methods only
 * add to in-memory statistic sets and Prometheus's counters: O(1), no I/O, and they never throw.
 * Every metric_time_interval the interval is closed, the system sampled and each sink handed the
 * result; a sink that fails or stalls loses only its own data.
 */
import { ERRORS } from '../errors';
import { within } from '../util/within';
import { realClock, type Timer, type Timers } from '../util/clock';
import { M, METRICS } from './catalog';
import { gaugeSeries, IntervalAggregator, type Series, type Snapshot } from './interval';
import type { PrometheusMetrics } from './prometheus';
import type { IntervalSink } from './sink';

export interface InvocationEvent {
  /** The model invoked; '' when the request named none the server knows (counted for the endpoint only). */
  readonly model: string;
  readonly status: number;
  /** From request arrival to response. */
  readonly totalMicros: number;
  /** 0 when the request never reached a worker. */
  readonly modelMicros: number;
  readonly queueMicros: number;
  /** Requests in the batch it ran in; 0 = it never ran (404, queue full, timeout in the queue). */
  readonly batchSize: number;
  /** ModelLoadingWaitTime's, so not overhead. */
  readonly loadWaitMicros?: number;
}

export interface RecorderParts {
  readonly intervalMs: number;
  readonly perModel: boolean;
  readonly sinks: readonly IntervalSink[];
  readonly prometheus: PrometheusMetrics | null;
  /** CPU, memory, disk. */
  readonly sampleSystem: () => Promise<Series[]>;
  readonly log: (line: string) => void;
  /** Wall clock, ms since the epoch: the interval timestamps. */
  readonly now?: () => number;
  readonly timers?: Timers;
}

/** A system reading slower than this is skipped for the interval rather than delaying its sinks. */
const kSampleTimeoutMs = 5000;
/** A client that went away did not make an error: it is an invocation, not a 4xx (nginx's 499). */
const kClientClosed = ERRORS.MME_ERR_CLIENT_CLOSED.status;

export class MetricsRecorder {
  readonly #now: () => number;
  readonly #timers: Timers;
  readonly #interval: IntervalAggregator;
  #loadedModels = 0;
  /** ModelWorkers by model, as last reported. */
  readonly #workers = new Map<string, number>();
  /** Their sum, kept as they change: a load costs the same with 100 000 models as with ten. */
  #workersTotal = 0;
  #timer: Timer | null = null;
  /** Intervals are closed one after the other, so sinks see them in order. */
  #flushing: Promise<void> = Promise.resolve();
  #closed = false;
  #reportedError = false;

  constructor(private readonly parts: RecorderParts) {
    this.#now = parts.now ?? Date.now;
    this.#timers = parts.timers ?? realClock;
    this.#interval = new IntervalAggregator(parts.perModel);
  }

  /** null when metrics_prometheus is off. */
  get prometheus(): PrometheusMetrics | null {
    return this.parts.prometheus;
  }

  dropped(): ReadonlyMap<string, number> {
    return new Map(this.parts.sinks.map((s) => [s.name, s.dropped]));
  }

  invocation(e: InvocationEvent): void {
    const m = e.model;
    this.#add(M.Invocations, m, 1);
    this.#add(M.Invocation4XXErrors, m, e.status >= 400 && e.status < 500 && e.status !== kClientClosed ? 1 : 0);
    this.#add(M.Invocation5XXErrors, m, e.status >= 500 ? 1 : 0);
    // A request that never ran has no model time; zeros would drag the latency statistics down.
    if (e.batchSize > 0) {
      this.#add(M.ModelLatency, m, e.modelMicros);
      this.#add(M.OverheadLatency, m, Math.max(0, e.totalMicros - e.modelMicros - (e.loadWaitMicros ?? 0)));
      this.#add(M.QueueTime, m, e.queueMicros);
      this.#add(M.BatchSize, m, e.batchSize);
    }
  }

  cacheLookup(model: string, hit: boolean): void {
    this.#add(M.ModelCacheHit, model, hit ? 1 : 0);
  }

  modelLoaded(model: string, micros: number, ok: boolean): void {
    this.#add(ok ? M.ModelLoadingTime : M.ModelLoadFailures, model, ok ? micros : 1);
  }

  modelUnloaded(model: string, micros: number): void {
    this.#add(M.ModelUnloadingTime, model, micros);
  }

  loadWait(model: string, micros: number): void {
    this.#add(M.ModelLoadingWaitTime, model, micros);
  }

  /** Its unload time goes to modelUnloaded. */
  evicted(model: string, idleMs: number): void {
    this.#add(M.ModelEvictions, model, 1);
    this.#add(M.EvictedModelIdleTime, model, idleMs / 1000);
  }

  idleUnloaded(model: string): void {
    this.#add(M.ModelIdleUnloads, model, 1);
  }

  workerRestarted(model: string): void {
    this.#add(M.WorkerRestarts, model, 1);
  }

  sharedHostRestarted(): void {
    this.#add(M.SharedHostRestarts, '', 1);
  }

  sharedHostRunTime(model: string, micros: number): void {
    this.#add(M.SharedHostRunTime, model, micros);
  }

  sharedHostRecycled(): void {
    this.#add(M.SharedHostRecycles, '', 1);
  }

  repositoryDownload(model: string, bytes: number, micros: number): void {
    this.#add(M.RepositoryDownloads, model, 1);
    this.#add(M.RepositoryDownloadBytes, model, bytes);
    this.#add(M.ModelDownloadingTime, model, micros);
  }

  repositoryError(model: string): void {
    this.#add(M.RepositoryErrors, model, 1);
  }

  diskCacheLookup(model: string, hit: boolean): void {
    this.#add(M.ModelDiskCacheHit, model, hit ? 1 : 0);
  }

  unauthorized(): void {
    this.#add(M.UnauthorizedRequests, '', 1);
  }

  /** 0 = the model is gone. */
  modelWorkers(model: string, workers: number): void {
    this.#safely(() => {
      this.#workersTotal += workers - (this.#workers.get(model) ?? 0);
      if (workers > 0) this.#workers.set(model, workers);
      else this.#workers.delete(model);
      // Prometheus sees the change now, not at the next interval: a scrape between two shows it.
      const prometheus = this.parts.prometheus;
      if (!prometheus) return;
      if (this.#workers.size > 0) prometheus.observe(M.ModelWorkers, '', this.#workersTotal);
      if (this.parts.perModel && workers > 0) prometheus.observe(M.ModelWorkers, model, workers);
    });
  }

  /** Applied, or (reason no_memory, no_cores, no_gain) a scale-up skipped. */
  autoscaleEvent(model: string, direction: string, reason: string): void {
    this.#add(M.AutoscaleEvents, model, 1, { direction, reason });
  }

  loadedModelCount(n: number): void {
    this.#loadedModels = n;
    this.#safely(() => this.parts.prometheus?.observe(M.LoadedModelCount, '', n));
  }

  start(): void {
    if (this.#timer !== null || this.#closed) return;
    // The first CPU reading only starts the measurement; taking it now makes interval 1 count.
    void this.#sample();
    this.#tick();
  }

  /** Re-armed after each interval rather than an interval timer, so a virtual clock can drive it. */
  #tick(): void {
    this.#timer = this.#timers.setTimeout(() => {
      this.#tick();
      void this.flush();
    }, this.parts.intervalMs);
    this.#timer.unref();
  }

  /** Ends the current interval now (the timer calls this; tests may too). */
  flush(): Promise<void> {
    return this.#closed ? this.#flushing : this.#flush();
  }

  /** Stops the timer, publishes the last interval and lets each sink deliver for up to timeoutMs. */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
    await this.#flush();
    await Promise.all(this.parts.sinks.map((s) => s.close(timeoutMs).catch((err) => this.#sinkError(s.name, err))));
  }

  #flush(): Promise<void> {
    const events = this.#interval.take();
    const timestampMs = this.#now();
    const loaded = gaugeSeries(METRICS[M.LoadedModelCount], this.#loadedModels);
    const workers = this.#workerSeries();
    this.#flushing = this.#flushing.then(async () => {
      const system = await this.#sample();
      this.#deliver({ timestampMs, series: [...events, loaded, ...workers, ...system] });
    });
    return this.#flushing;
  }

  #workerSeries(): Series[] {
    if (this.#workers.size === 0) return [];
    const def = METRICS[M.ModelWorkers];
    const total = this.#workersTotal;
    const perModel = this.parts.perModel
      ? [...this.#workers].map(([model, n]) => ({ ...gaugeSeries(def, n), model }))
      : [];
    return [gaugeSeries(def, total), ...perModel];
  }

  /** Every event goes through here, so a bug in metrics never reaches the request or load that reported it. */
  #add(id: number, model: string, value: number, labels?: Record<string, string>): void {
    if (!Number.isFinite(value)) return;
    this.#safely(() => {
      this.#interval.add(id, model, value);
      this.parts.prometheus?.observe(id, model, value, labels);
    });
  }

  #safely(fn: () => void, onError = (err: unknown) => this.#internalError(err)): void {
    try {
      fn();
    } catch (err) {
      onError(err);
    }
  }

  #deliver(snapshot: Snapshot): void {
    this.#safely(() => this.parts.prometheus?.write(snapshot));
    for (const sink of this.parts.sinks)
      this.#safely(
        () => sink.write(snapshot),
        (err) => this.#sinkError(sink.name, err),
      );
  }

  async #sample(): Promise<Series[]> {
    try {
      return await within(this.parts.sampleSystem(), kSampleTimeoutMs, []);
    } catch (err) {
      this.#sinkError('system', err);
      return [];
    }
  }

  #sinkError(name: string, err: unknown): void {
    this.parts.log(`metrics: ${name} failed: ${(err as Error)?.message ?? String(err)}`);
  }

  /** A bug in metrics must not fail requests; say so once instead of on every request. */
  #internalError(err: unknown): void {
    if (this.#reportedError) return;
    this.#reportedError = true;
    this.parts.log(`metrics: recording failed (reported once): ${(err as Error)?.stack ?? String(err)}`);
  }
}
