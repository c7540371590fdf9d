/**
 * The Prometheus view: counters and histograms updated per event (a scrape needs every sample in
 * its buckets, not per-interval averages), gauges set from each interval's system readings. Its
 * own registry, so nothing else in the process leaks into /metrics.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { METRICS, type MetricDef } from './catalog';
import type { Snapshot } from './interval';
import type { IntervalSink } from './sink';

/** `model` '' = no model label (see InvocationEvent.model); `labels`: the metric's own (catalog's `labels`). */
type Observe = (model: string, value: number, labels?: Record<string, string>) => void;

export class PrometheusMetrics {
  readonly registry = new Registry();
  readonly #observe: Observe[];
  /** Per-model gauges, cleared before each interval's readings. */
  readonly #modelGauges: Gauge[] = [];

  /** `sinks` are read at scrape time for their drop counts. */
  constructor(perModel: boolean, sinks: readonly IntervalSink[]) {
    this.#observe = METRICS.map((def) => this.#observer(def, perModel && def.scope === 'model'));
    new Counter({
      name: 'mme_metrics_dropped_total',
      help: 'Metric data a sink had to discard: CloudWatch unreachable past metrics_cloudwatch_max_buffered, or a log destination not keeping up.',
      labelNames: ['sink'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const sink of sinks) this.inc({ sink: sink.name }, sink.dropped);
      },
    });
    // Event-loop lag, heap and GC: what explains a slow server that the request metrics cannot.
    collectDefaultMetrics({ register: this.registry });
  }

  observe(id: number, model: string, value: number, labels?: Record<string, string>): void {
    this.#observe[id](model, value, labels);
  }

  /**
   * Gauges come from the interval's readings (a model's from its series, so a model gone since is
   * gone from the gauge too); counters and histograms are already current.
   */
  write(snapshot: Snapshot): void {
    for (const g of this.#modelGauges) g.reset();
    for (const s of snapshot.series) {
      if (s.def.prometheus.type === 'gauge') this.#observe[s.def.id](s.model ?? '', s.sum / s.count);
    }
  }

  #observer(def: MetricDef, byModel: boolean): Observe {
    const common = {
      help: `${def.help} (CloudWatch: ${def.name})`,
      labelNames: [
        ...(byModel ? ['model'] : []),
        ...(def.prometheus.type === 'counter' ? (def.prometheus.labels ?? []) : []),
      ],
      registers: [this.registry],
    };
    const p = def.prometheus;
    const scale = def.unit === 'Microseconds' ? 1e-6 : 1;
    switch (p.type) {
      case 'counter': {
        const c = new Counter({ ...common, name: p.name });
        return byModel
          ? (model, v, labels = {}) => c.inc(model ? { ...labels, model } : labels, v * scale)
          : (_model, v, labels = {}) => c.inc(labels, v * scale);
      }
      case 'histogram': {
        const h = new Histogram({ ...common, name: p.name, buckets: [...p.buckets] });
        return byModel
          ? (model, v) => (model ? h.observe({ model }, v * scale) : h.observe(v * scale))
          : (_model, v) => h.observe(v * scale);
      }
      case 'gauge': {
        const g = new Gauge({ ...common, name: p.name });
        if (!byModel) return (_model, v) => g.set(v);
        this.#modelGauges.push(g);
        return (model, v) => (model ? g.set({ model }, v) : g.set(v));
      }
    }
  }
}
