import assert from 'node:assert/strict';
import type { PrometheusMetrics } from '../../src/metrics/prometheus';
import type { IntervalSink } from '../../src/metrics/sink';
import { CapturingSink, invoke, recorder } from './helpers';
import { VirtualClock } from '../helpers/virtual-clock';

describe('metrics: recorder', () => {
  it('closes intervals: each flush delivers what came since the last one, in order', async () => {
    const { r, sink } = recorder();
    r.invocation(invoke('a'));
    r.invocation(invoke('a', { status: 400, modelMicros: 0, totalMicros: 100, batchSize: 0 }));
    const first = r.flush();
    r.invocation(invoke('a', { batchSize: 4, totalMicros: 5000, modelMicros: 4000, queueMicros: 700 }));
    await first;
    await r.flush();
    await r.flush();

    assert.deepEqual(
      sink.snapshots.map((s) => s.timestampMs),
      [1000, 2000, 3000],
    );
    assert.deepEqual(sink.stats(0).Invocations, { count: 2, sum: 2, min: 1, max: 1 });
    assert.deepEqual(sink.stats(0).Invocation4XXErrors, { count: 2, sum: 1, min: 0, max: 1 });
    assert.deepEqual(
      sink.stats(0).ModelLatency,
      { count: 1, sum: 1000, min: 1000, max: 1000 },
      'the request that never ran has no latency',
    );
    assert.deepEqual(sink.stats(1).OverheadLatency, { count: 1, sum: 1000, min: 1000, max: 1000 });
    assert.deepEqual(sink.stats(1).QueueTime, { count: 1, sum: 700, min: 700, max: 700 });
    assert.deepEqual(sink.stats(1).BatchSize, { count: 1, sum: 4, min: 4, max: 4 });
    assert.deepEqual(Object.keys(sink.stats(2)), ['LoadedModelCount'], 'an idle interval has only the gauges');
  });

  it('keeps per-model series only when asked, and only for models seen in the interval', async () => {
    const { r, sink } = recorder({ perModel: true });
    r.invocation(invoke('a'));
    r.invocation(invoke('b'));
    await r.flush();
    r.invocation(invoke('b'));
    await r.flush();
    const models = (i: number) => [...new Set(sink.snapshots[i].series.map((s) => s.model))];
    assert.deepEqual(models(0), [null, 'a', 'b']);
    assert.deepEqual(models(1), [null, 'b']);
  });

  it('never throws from an event method and ignores values that are not finite', async () => {
    const failing = {
      observe() {
        throw new Error('boom');
      },
      write() {
        throw new Error('boom');
      },
    } as unknown as PrometheusMetrics;
    const { r, sink, log } = recorder({ prometheus: failing });
    assert.doesNotThrow(() => {
      r.invocation(invoke('a'));
      r.invocation(invoke('a'));
      r.modelLoaded('a', 1, true);
      r.loadedModelCount(1);
      r.cacheLookup('a', true);
    });
    assert.equal(log.filter((l) => /recording failed \(reported once\)/.test(l)).length, 1);

    const { r: r2, sink: sink2 } = recorder();
    r2.invocation(invoke('a', { modelMicros: NaN, totalMicros: Infinity }));
    await r2.flush();
    assert.equal(sink2.stats(0).ModelLatency, undefined);
    assert.equal(sink2.stats(0).Invocations.sum, 1);
    await r.flush();
    assert.equal(sink.snapshots.length, 1, 'intervals still reach the sinks');
  });

  it('a sink or system reading that fails costs only itself', async () => {
    const bad: IntervalSink = {
      name: 'bad',
      dropped: 0,
      write() {
        throw new Error('sink down');
      },
      close: async () => {
        throw new Error('no close');
      },
    };
    const good = new CapturingSink('good');
    const { r, log } = recorder({
      sinks: [bad, good],
      sampleSystem: async () => {
        throw new Error('no /proc');
      },
    });
    r.invocation(invoke('a'));
    await r.close();
    assert.equal(good.snapshots.length, 1);
    assert.ok(good.closed);
    assert.ok(log.some((l) => /bad failed: sink down/.test(l)));
    assert.ok(log.some((l) => /system failed: no \/proc/.test(l)));
    assert.ok(log.some((l) => /bad failed: no close/.test(l)));
  });

  it('publishes every intervalMs once started, and a last interval on close (once)', async () => {
    const timers = new VirtualClock();
    const { r, sink } = recorder({ intervalMs: 30, timers });
    r.start();
    r.invocation(invoke('a'));
    timers.advance(60);
    await r.flush();
    assert.equal(sink.snapshots.length, 3, 'two intervals, then the flush');
    await r.close();
    await r.close();
    await r.flush();
    assert.equal(sink.snapshots.length, 4);
    assert.equal(timers.pending, 0, 'the timer is stopped');
    timers.advance(60);
    await r.flush();
    assert.equal(sink.snapshots.length, 4);
  });
});
