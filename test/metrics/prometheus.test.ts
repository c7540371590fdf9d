import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import parsePrometheusTextFormat, { type MetricFamily } from 'parse-prometheus-text-format';
import { koaListener } from '../../src/http/listener';
import { metricsApp, metricsRoute } from '../../src/http/metrics-route';
import { createMetrics, type MetricsRecorder } from '../../src/metrics';
import { METRICS } from '../../src/metrics/catalog';
import { configWith, request } from './helpers';

async function serve(app: Koa): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(koaListener(app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function scrape(url: string): Promise<Map<string, MetricFamily>> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/);
  return new Map(parsePrometheusTextFormat(await res.text()).map((f) => [f.name, f]));
}

function family(families: Map<string, MetricFamily>, name: string): MetricFamily {
  const f = families.get(name);
  assert.ok(f, `no ${name} in /metrics`);
  return f;
}

describe('metrics: Prometheus at GET /metrics', () => {
  let recorder: MetricsRecorder;
  afterEach(() => recorder.close(100));

  it('serves counters, latency histograms in seconds and interval gauges that parse as Prometheus text', async () => {
    recorder = createMetrics(configWith('metrics_prometheus=true'), { log: () => undefined });
    for (let i = 0; i < 3; i++) request(recorder, 'a');
    request(recorder, 'b', false, { status: 404, batchSize: 0 });
    recorder.modelLoaded('b', 2_500_000, true);
    recorder.loadedModelCount(2);
    await recorder.flush();
    const server = await serve(metricsApp(recorder));
    try {
      const families = await scrape(server.url);
      assert.deepEqual(family(families, 'mme_invocations_total').metrics, [{ value: '4' }]);
      assert.deepEqual(family(families, 'mme_model_cache_hits_total').metrics, [{ value: '3' }]);
      assert.deepEqual(family(families, 'mme_invocation_4xx_errors_total').metrics, [{ value: '1' }]);
      assert.deepEqual(family(families, 'mme_loaded_model_count').metrics, [{ value: '2' }]);

      const latency = family(families, 'mme_model_latency_seconds');
      assert.equal(latency.type, 'HISTOGRAM');
      assert.equal(latency.metrics[0].count, '3');
      assert.equal(Number(latency.metrics[0].sum), 0.003);
      assert.equal(latency.metrics[0].buckets!['0.001'], '3');
      assert.equal(latency.metrics[0].buckets!['0.0005'], '0');
      assert.equal(family(families, 'mme_overhead_latency_seconds').metrics[0].count, '3');
      assert.equal(Number(family(families, 'mme_model_loading_time_seconds').metrics[0].sum), 2.5);
      assert.equal(family(families, 'mme_batch_size').metrics[0].buckets!['1'], '3');

      for (const name of [
        'mme_cpu_utilization_percent',
        'mme_memory_utilization_percent',
        'mme_memory_used_megabytes',
        'mme_memory_available_megabytes',
        'mme_disk_utilization_percent',
      ]) {
        assert.equal(family(families, name).type, 'GAUGE');
      }
      assert.ok(Number(family(families, 'mme_memory_used_megabytes').metrics[0].value) > 0);
      // Every metric of the catalog is there, with its CloudWatch name in the help.
      for (const def of METRICS)
        assert.match(family(families, def.prometheus.name).help, new RegExp(`CloudWatch: ${def.name}\\)$`));
      assert.ok(families.has('nodejs_eventloop_lag_seconds'), 'the default Node.js process metrics are included');
    } finally {
      await server.close();
    }
  });

  it('labels request metrics by model only with metrics_per_model_dimension=true', async () => {
    recorder = createMetrics(configWith('metrics_prometheus=true', 'metrics_per_model_dimension=true'), {
      log: () => undefined,
    });
    request(recorder, 'a');
    request(recorder, 'b', false);
    const server = await serve(metricsApp(recorder));
    try {
      const hits = family(await scrape(server.url), 'mme_model_cache_hits_total').metrics;
      assert.deepEqual(hits.map((m) => [m.labels?.model, m.value]).sort(), [
        ['a', '1'],
        ['b', '0'],
      ]);
    } finally {
      await server.close();
    }
  });

  it('as middleware, answers only GET and HEAD /metrics and passes everything else on', async () => {
    recorder = createMetrics(configWith('metrics_prometheus=true'), { log: () => undefined });
    const app = new Koa();
    app.use(metricsRoute(recorder));
    app.use((ctx) => {
      ctx.body = `next: ${ctx.method} ${ctx.path}`;
    });
    const server = await serve(app);
    try {
      assert.equal(await (await fetch(`${server.url}/ping`)).text(), 'next: GET /ping');
      assert.equal(await (await fetch(`${server.url}/metrics`, { method: 'POST' })).text(), 'next: POST /metrics');
      assert.equal((await fetch(`${server.url}/metrics`, { method: 'HEAD' })).status, 200);
    } finally {
      await server.close();
    }
  });

  it('is not served with metrics_prometheus=false', async () => {
    recorder = createMetrics(configWith(), { log: () => undefined });
    assert.equal(recorder.prometheus, null);
    const server = await serve(metricsApp(recorder));
    try {
      assert.equal((await fetch(`${server.url}/metrics`)).status, 404);
    } finally {
      await server.close();
    }
  });
});
