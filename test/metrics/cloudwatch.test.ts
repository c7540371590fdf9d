import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMetrics, type MetricsRecorder } from '../../src/metrics';
import { CloudWatchSink } from '../../src/metrics/cloudwatch';
import { M, METRICS } from '../../src/metrics/catalog';
import { gaugeSeries, type Snapshot } from '../../src/metrics/interval';
import { waitFor } from '../../harness/process-probes';
import type { Timer } from '../../src/util/clock';
import { VirtualClock } from '../helpers/virtual-clock';
import { FakeCloudWatch, type ReceivedDatum } from './fake-cloudwatch';
import { configWith, invoke, request, sleep, useFakeAwsCredentials } from './helpers';

const kNow = 1_700_000_000_000;
const kEndpointDims = [
  { Name: 'EndpointName', Value: 'ep' },
  { Name: 'VariantName', Value: 'AllTraffic' },
];

function find(data: ReceivedDatum[], name: string, model: string | null = null): ReceivedDatum {
  const hit = data.find(
    (d) =>
      d.MetricName === name && (d.Dimensions ?? []).find((x) => x.Name === 'ModelName')?.Value === (model ?? undefined),
  );
  assert.ok(
    hit,
    `no ${name}${model === null ? '' : ` for model ${model}`} among ${data.map((d) => d.MetricName).join(', ')}`,
  );
  return hit;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('metrics: CloudWatch sink (real SDK against a local PutMetricData endpoint)', () => {
  useFakeAwsCredentials();
  let fake: FakeCloudWatch;
  const recorders: MetricsRecorder[] = [];
  beforeEach(async () => {
    fake = await FakeCloudWatch.start();
  });
  afterEach(async () => {
    await Promise.all(recorders.splice(0).map((r) => r.close(100)));
    await fake.close();
  });

  function recorder(...lines: string[]): MetricsRecorder {
    const r = createMetrics(
      configWith(
        'metrics_cloudwatch=true',
        'metrics_cloudwatch_region=us-east-1',
        `metrics_cloudwatch_endpoint=${fake.url}`,
        'metrics_endpoint_name=ep',
        'metrics_variant_name=AllTraffic',
        ...lines,
      ),
      { log: () => undefined, now: () => kNow },
    );
    recorders.push(r);
    return r;
  }

  it('sends an interval as statistic sets with SageMaker names, units and dimensions', async () => {
    const r = recorder();
    r.start();
    for (let i = 0; i < 3; i++) request(r, 'a');
    request(r, 'b', false, { status: 404, batchSize: 0, modelMicros: 0, queueMicros: 0 });
    r.invocation(invoke('c', { status: 503, totalMicros: 900, modelMicros: 0, batchSize: 0 })); // rejected before any lookup
    r.modelLoaded('b', 2_000_000, true);
    r.modelLoaded('c', 10, false);
    r.loadWait('b', 1_500_000);
    r.modelUnloaded('a', 300_000);
    r.evicted('a', 90_000);
    r.loadedModelCount(2);
    await sleep(20); // so the CPU rate has an interval to divide by
    await r.close();

    assert.deepEqual(fake.protocolErrors, []);
    assert.equal(fake.calls.length, 1, 'one interval, one request');
    const [call] = fake.calls;
    assert.equal(call.namespace, 'SageMakerMME');
    assert.equal(call.accessKeyId, 'AKIDMMETEST', 'credentials come from the default chain');
    const data = call.data;
    for (const d of data) {
      assert.deepEqual(d.Dimensions, kEndpointDims, `${d.MetricName} has the endpoint dimensions only`);
      assert.equal(d.Timestamp, kNow / 1000);
      assert.equal(d.Unit, METRICS.find((m) => m.name === d.MetricName)!.unit);
    }
    const stats = (name: string) => find(data, name).StatisticValues;
    assert.deepEqual(stats('ModelCacheHit'), { SampleCount: 4, Sum: 3, Minimum: 0, Maximum: 1 }, '3 hits, 1 miss');
    assert.deepEqual(stats('Invocations'), { SampleCount: 5, Sum: 5, Minimum: 1, Maximum: 1 });
    assert.deepEqual(stats('Invocation4XXErrors'), { SampleCount: 5, Sum: 1, Minimum: 0, Maximum: 1 });
    assert.deepEqual(stats('Invocation5XXErrors'), { SampleCount: 5, Sum: 1, Minimum: 0, Maximum: 1 });
    // Only the three requests that ran count towards latency.
    assert.deepEqual(stats('ModelLatency'), { SampleCount: 3, Sum: 3000, Minimum: 1000, Maximum: 1000 });
    assert.deepEqual(stats('OverheadLatency'), { SampleCount: 3, Sum: 1500, Minimum: 500, Maximum: 500 });
    assert.deepEqual(stats('QueueTime'), { SampleCount: 3, Sum: 600, Minimum: 200, Maximum: 200 });
    assert.deepEqual(stats('BatchSize'), { SampleCount: 3, Sum: 3, Minimum: 1, Maximum: 1 });
    assert.deepEqual(stats('ModelLoadingTime'), {
      SampleCount: 1,
      Sum: 2_000_000,
      Minimum: 2_000_000,
      Maximum: 2_000_000,
    });
    assert.equal(stats('ModelLoadFailures')!.Sum, 1);
    assert.equal(stats('ModelLoadingWaitTime')!.Sum, 1_500_000);
    assert.equal(stats('ModelUnloadingTime')!.Sum, 300_000);
    assert.equal(stats('ModelEvictions')!.Sum, 1);
    assert.equal(stats('EvictedModelIdleTime')!.Sum, 90);
    assert.deepEqual(stats('LoadedModelCount'), { SampleCount: 1, Sum: 2, Minimum: 2, Maximum: 2 });
    for (const name of ['CPUUtilization', 'MemoryUtilization', 'MemoryUsed', 'MemoryAvailable', 'DiskUtilization']) {
      const s = stats(name)!;
      assert.equal(s.SampleCount, 1);
      assert.ok(s.Sum >= 0 && Number.isFinite(s.Sum), `${name} = ${s.Sum}`);
    }
    assert.ok(stats('MemoryUtilization')!.Sum <= 100);
  });

  it('adds a ModelName series per model only when metrics_per_model_dimension=true', async () => {
    const r = recorder('metrics_per_model_dimension=true');
    for (let i = 0; i < 3; i++) request(r, 'a');
    request(r, 'b', false);
    r.loadedModelCount(2);
    await r.close();

    const data = fake.data();
    assert.deepEqual(find(data, 'ModelCacheHit').StatisticValues, { SampleCount: 4, Sum: 3, Minimum: 0, Maximum: 1 });
    assert.deepEqual(find(data, 'ModelCacheHit', 'a').StatisticValues, {
      SampleCount: 3,
      Sum: 3,
      Minimum: 1,
      Maximum: 1,
    });
    assert.deepEqual(find(data, 'ModelCacheHit', 'b').StatisticValues, {
      SampleCount: 1,
      Sum: 0,
      Minimum: 0,
      Maximum: 0,
    });
    assert.deepEqual(find(data, 'Invocations', 'b').Dimensions, [...kEndpointDims, { Name: 'ModelName', Value: 'b' }]);
    // Instance metrics have no model.
    assert.ok(!data.some((d) => d.MetricName === 'LoadedModelCount' && d.Dimensions!.length !== 2));
  });

  it('splits a large interval into requests of at most 1000 data, gzip-compressed as the SDK does', async () => {
    const r = recorder('metrics_per_model_dimension=true');
    for (let i = 0; i < 300; i++) request(r, `model-${i}`);
    // Bounded by the test's own timeout, not a delivery deadline: a busy machine may need longer than usual.
    await r.close(50_000);

    assert.deepEqual(fake.protocolErrors, []);
    const expected = 301 * 8; // 7 request metrics and ModelCacheHit, for the endpoint and for each model
    assert.ok(fake.data().length >= expected, `${fake.data().length} data received`);
    assert.ok(fake.calls.length >= 3);
    for (const c of fake.calls) assert.ok(c.data.length <= 1000, `a request carried ${c.data.length} data`);
    assert.ok(
      fake.calls.some((c) => c.gzip),
      'bodies over 10 KiB arrive gzip-compressed',
    );
    assert.deepEqual(find(fake.data(), 'Invocations', 'model-299').StatisticValues, {
      SampleCount: 1,
      Sum: 1,
      Minimum: 1,
      Maximum: 1,
    });
  });

  describe('when CloudWatch misbehaves', () => {
    const kMaxBackoffMs = 20;
    const kRequestTimeoutMs = 3000;
    /** Virtual time, so that a request times out only when the test moves time past its limit. */
    class SinkClock extends VirtualClock {
      backoffs = 0;
      override setTimeout(fn: () => void, ms: number): Timer {
        if (ms <= kMaxBackoffMs) this.backoffs++;
        return super.setTimeout(fn, ms);
      }
      /** The sink arms its n-th back-off once the n-th failed answer is in. */
      armed(n: number): Promise<void> {
        return waitFor(() => this.backoffs >= n, `back-off ${n}`, 60_000);
      }
      async backOff(n: number): Promise<void> {
        await this.armed(n);
        this.advance(kMaxBackoffMs);
      }
    }
    let clock: SinkClock;
    beforeEach(() => {
      clock = new SinkClock();
    });
    const snapshot = (i: number): Snapshot => ({
      timestampMs: kNow + i * 60_000,
      series: [gaugeSeries(METRICS[M.LoadedModelCount], i)],
    });
    function sink(log: string[] = [], maxBuffered = 100): CloudWatchSink {
      return new CloudWatchSink({
        namespace: 'Test',
        region: 'us-east-1',
        endpoint: fake.url,
        maxBuffered,
        dimensions: [],
        log: (line) => log.push(line),
        backoffMs: 5,
        maxBackoffMs: kMaxBackoffMs,
        requestTimeoutMs: kRequestTimeoutMs,
        timers: clock,
      });
    }

    it('retries failures, throttling and timeouts with back-off, then delivers everything', async () => {
      const log: string[] = [];
      const s = sink(log);
      fake.script.push('fail', 'throttle', 'hang');
      s.write(snapshot(1));
      await clock.backOff(1);
      await clock.backOff(2);
      await waitFor(() => fake.attempts === 3, 'the request that hangs');
      clock.advance(kRequestTimeoutMs);
      await clock.backOff(3);
      // The sink counts the batch, and logs the recovery, once the answer is in: after the fake has it.
      await waitFor(() => s.sent === 1, 'the sink to count the retried batch delivered', 60_000);
      assert.equal(fake.calls.length, 1);
      assert.equal(fake.attempts, 4);
      assert.equal(fake.calls[0].data[0].StatisticValues!.Sum, 1);
      assert.equal(s.dropped, 0);
      assert.equal(s.sent, 1);
      assert.equal(
        log.filter((l) => /PutMetricData failed/.test(l)).length,
        1,
        'one log line per outage, not per attempt',
      );
      assert.ok(log.some((l) => /works again after 3 failed attempts/.test(l)));
      await s.close(100);
    });

    it('drops a batch CloudWatch rejects, counts it and goes on', async () => {
      const s = sink();
      fake.script.push('reject');
      s.write(snapshot(1));
      await waitFor(() => fake.attempts === 1 && s.queued === 0, 'the rejected request');
      s.write(snapshot(2));
      await waitFor(() => fake.calls.length === 1, 'the next interval');
      assert.equal(s.dropped, 1);
      assert.equal(fake.calls[0].data[0].StatisticValues!.Sum, 2);
      await s.close(100);
    });

    it('keeps at most metrics_cloudwatch_max_buffered data while unreachable, dropping the oldest', async () => {
      const s = sink([], 3);
      fake.mode = 'fail';
      for (let i = 1; i <= 5; i++) s.write(snapshot(i));
      let most = s.queued;
      for (let n = 1; n <= 3; n++) {
        if (n > 1) clock.advance(kMaxBackoffMs);
        await clock.armed(n);
        most = Math.max(most, s.queued);
      }
      assert.ok(most <= 3, `${most} data queued`);
      fake.mode = 'ok';
      clock.advance(kMaxBackoffMs);
      await waitFor(() => fake.calls.length === 1, 'the queue to drain');
      assert.deepEqual(
        fake.data().map((d) => d.StatisticValues!.Sum),
        [3, 4, 5],
        'the newest data survive',
      );
      assert.equal(s.dropped, 2);
      await s.close(100);
    });

    it('close() gives up on a hung endpoint after its timeout and counts what was lost', async () => {
      const s = sink();
      fake.mode = 'hang';
      s.write(snapshot(1));
      const closed = s.close(150);
      await waitFor(() => fake.attempts === 1, 'the request that hangs');
      clock.advance(150);
      await closed;
      assert.equal(s.dropped, 1);
    });
  });

  describe('serving is never held up', () => {
    it('counts drops while the endpoint is down, in dropped() and in /metrics', async () => {
      const port = await closedPort();
      const r = createMetrics(
        configWith(
          'metrics_cloudwatch=true',
          'metrics_cloudwatch_region=us-east-1',
          `metrics_cloudwatch_endpoint=http://127.0.0.1:${port}`,
          'metrics_cloudwatch_max_buffered=10',
          'metrics_prometheus=true',
        ),
        { log: () => undefined },
      );
      recorders.push(r);
      for (let i = 0; i < 5; i++) {
        r.invocation(invoke('a'));
        await r.flush();
      }
      const dropped = r.dropped().get('cloudwatch')!;
      assert.ok(dropped > 0, 'five intervals of data do not fit in 10');
      const text = await r.prometheus!.registry.metrics();
      assert.match(text, new RegExp(`^mme_metrics_dropped_total\\{sink="cloudwatch"\\} ${dropped}$`, 'm'));
    });

    it('with CloudWatch hung, invocation() returns at once and calls nothing, and a flush does not wait for the hung request', async () => {
      fake.mode = 'hang';
      const hung = recorder('metrics_cloudwatch_max_buffered=50');
      hung.invocation(invoke('a'));
      await hung.flush(); // a request is now in flight and never answered
      await waitFor(() => fake.attempts === 1, 'the hung request');
      // Synchronous and free of I/O: no promise to wait on, no request per call.
      const event = invoke('a');
      for (let i = 0; i < 10_000; i++) assert.equal(hung.invocation(event), undefined);
      assert.equal(fake.attempts, 1, 'invocation() sent something to CloudWatch');
      // The interval queues behind the hung request: the flush resolves while that request still hangs.
      await hung.flush();
      assert.equal(fake.attempts, 1);
    });
  });
});
