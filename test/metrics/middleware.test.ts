import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { MmeError } from '../../src/errors';
import { errorResponse } from '../../src/http/error-response';
import { koaListener } from '../../src/http/listener';
import { invocationMetrics } from '../../src/metrics';
import { LifecycleEvents } from '../../src/server/models/lifecycle-events';
import { recorder } from './helpers';

describe('metrics: server glue', () => {
  it('the recorder serves as the model manager\'s event sink: the manager\'s cache lookups reach the ModelCacheHit metric', async () => {
    const { r, sink } = recorder();
    const events = new LifecycleEvents(() => 1);
    events.sink = r;
    events.lookup('m', true);
    events.lookup('m', true);
    events.lookup('m', false);
    await r.flush();
    assert.deepEqual(sink.stats(0).ModelCacheHit, { count: 3, sum: 2, min: 0, max: 1 });
  });

  it('invocationMetrics times the invoke routes and reports the status the client got, errors included', async () => {
    const { r, sink } = recorder();
    const app = new Koa();
    app.silent = true;
    app.use(invocationMetrics(r));
    app.use(errorResponse(() => undefined));
    app.use(async (ctx) => {
      if (ctx.path === '/ping') {
        ctx.body = 'pong';
        return;
      }
      ctx.state.model = 'm';
      if (ctx.path === '/busy') throw new MmeError('MME_ERR_QUEUE_FULL', 'full');
      await new Promise((resolve) => setTimeout(resolve, 5));
      ctx.state.result = { status: 200, contentType: 'text/plain', headers: {}, body: Buffer.from('ok'), modelMicros: 1000, queueMicros: 300, batchSize: 2 };
      ctx.body = 'ok';
    });
    const server = http.createServer(koaListener(app));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      assert.equal((await fetch(`${url}/models/m/invoke`, { method: 'POST' })).status, 200);
      assert.equal((await fetch(`${url}/models/m/invoke`, { method: 'POST' })).status, 200);
      assert.equal((await fetch(`${url}/busy`, { method: 'POST' })).status, 503);
      assert.equal((await fetch(`${url}/ping`)).status, 200);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await r.flush();
    const stats = sink.stats(0);
    assert.equal(stats.Invocations!.sum, 3, '/ping is not an invocation');
    assert.equal(stats.Invocation5XXErrors!.sum, 1);
    assert.deepEqual(stats.ModelLatency, { count: 2, sum: 2000, min: 1000, max: 1000 });
    assert.deepEqual(stats.QueueTime, { count: 2, sum: 600, min: 300, max: 300 });
    assert.equal(stats.BatchSize!.sum, 4);
    // A 5 ms timer may fire up to 1 ms early by the wall clock (libuv measures it from its cached loop time).
    assert.ok(stats.OverheadLatency!.min >= 3000, `overhead ${stats.OverheadLatency!.min} µs covers the 5 ms outside the model`);
  });
});
