/**
 * The gateway on its own, with a model manager reduced to what the gateway asks of it: the one
 * invocation metric, the known-model check, the Accept default, the refusal during shutdown and
 * the error line. The doors' use of it runs on real servers in test/http and test/grpc.
 */
import assert from 'node:assert/strict';
import { MmeError } from '../../src/errors';
import { Gateway, type GatewayOptions, type ModelRequest } from '../../src/gateway/gateway';
import type { InvocationTrace, RequestTracer } from '../../src/gateway/tracing';
import type { ManagerEvents } from '../../src/server/models/lifecycle-events';
import { recorder } from '../metrics/helpers';

const kRequest: ModelRequest = {
  requestId: 'r',
  contentType: 'text/plain',
  accept: 'text/plain',
  body: Buffer.from('x'),
};

function gatewayOver(
  known: string[],
  invoke: GatewayOptions['manager']['invoke'],
  closing = false,
  tracer: GatewayOptions['tracer'] = null,
) {
  const { r, sink } = recorder();
  const logs: string[] = [];
  const gateway = new Gateway({
    manager: { knows: (name) => known.includes(name), invoke, closing },
    metrics: r,
    log: (line) => logs.push(line),
    defaultAccept: 'text/csv',
    tracer,
  });
  return { gateway, r, sink, logs };
}

describe('gateway', () => {
  it("the recorder is the model manager's events object as it is (manager.events = recorder)", () => {
    const events: ManagerEvents = recorder().r;
    assert.equal(typeof events.cacheLookup, 'function');
  });

  describe('on a virtual performance.now(), which times an invocation', () => {
    let virtualMs = 0;
    const realNow = performance.now.bind(performance);
    beforeEach(() => {
      performance.now = () => virtualMs;
    });
    afterEach(() => {
      performance.now = realNow;
    });

    it('counts each claimed invocation once, with the status the client got, errors included', async () => {
      const { gateway, r, sink } = gatewayOver(['m'], async (name, request) => {
        assert.equal(name, 'm');
        assert.equal(request.id, 0, "the frame id is the job's to give");
        // 5 ms pass in the model manager, 1 ms of them in the model (modelMicros below).
        virtualMs += 5;
        return {
          status: 200,
          contentType: 'text/plain',
          headers: {},
          body: Buffer.from('ok'),
          modelMicros: 1000,
          queueMicros: 300,
          batchSize: 2,
        };
      });
      for (let i = 0; i < 2; i++) {
        const inv = gateway.invocation();
        inv.target('m');
        await inv.run(kRequest, {});
        inv.finish();
        inv.finish();
      }
      const busy = gateway.invocation();
      busy.target('m');
      busy.finish(new MmeError('MME_ERR_SHUTTING_DOWN', 'closing'));
      const unknown = gateway.invocation();
      assert.throws(() => unknown.target('some client text'), { code: 'MME_ERR_MODEL_NOT_FOUND' });
      unknown.finish(new MmeError('MME_ERR_MODEL_NOT_FOUND', 'unknown'));
      // Refused before it named a model (a guard, a wrong version): no invocation.
      gateway.invocation().finish(new MmeError('MME_ERR_FORBIDDEN', 'refused'));
      await r.flush();
      const stats = sink.stats(0);
      assert.equal(stats.Invocations.sum, 4, 'two answered, one refused, one for a model the server does not know');
      assert.equal(stats.Invocation5XXErrors.sum, 1);
      assert.equal(stats.Invocation4XXErrors.sum, 1);
      assert.deepEqual(stats.ModelLatency, { count: 2, sum: 2000, min: 1000, max: 1000 });
      assert.deepEqual(stats.QueueTime, { count: 2, sum: 600, min: 300, max: 300 });
      assert.equal(stats.BatchSize.sum, 4);
      assert.deepEqual(
        stats.OverheadLatency,
        { count: 2, sum: 8000, min: 4000, max: 4000 },
        'the 4 ms outside the model',
      );
    });
  });

  it("hands each claimed invocation to the tracer once, in time order, with the caller's trace context", async () => {
    const traces: InvocationTrace[] = [];
    const tracer = { record: (t: InvocationTrace) => traces.push(t) } as unknown as RequestTracer;
    const result = {
      status: 200,
      contentType: 'text/plain',
      headers: {},
      body: Buffer.from('ok'),
      modelMicros: 10,
      queueMicros: 5,
      batchSize: 1,
      workerPid: 42,
    };
    const { gateway } = gatewayOver(['m'], async () => result, false, tracer);
    const inv = gateway.invocation('rid');
    inv.target('m');
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await inv.run({ ...kRequest, headers: { traceparent, tracestate: ['a=1', 'b=2'] } }, {});
    inv.finish();
    inv.finish();
    const unknown = gateway.invocation();
    assert.throws(() => unknown.target('x'));
    unknown.finish(new MmeError('MME_ERR_MODEL_NOT_FOUND', 'unknown'));
    gateway.invocation().finish(new MmeError('MME_ERR_FORBIDDEN', 'refused'));
    assert.equal(traces.length, 2, 'the answered one and the 404; a refusal before a name is no invocation');
    const [t, t404] = traces;
    assert.deepEqual(
      { ...t, start: 0, runStart: 0, runEnd: 0, end: 0 },
      {
        requestId: 'rid',
        model: 'm',
        status: 200,
        start: 0,
        end: 0,
        runStart: 0,
        runEnd: 0,
        traceparent,
        // Repeated tracestate headers are one list (W3C Trace Context).
        tracestate: 'a=1,b=2',
        result,
      },
    );
    assert.ok(t.start <= t.runStart && t.runStart <= t.runEnd && t.runEnd <= t.end);
    assert.deepEqual([t404.model, t404.status, t404.runEnd, t404.result], ['', 404, 0, undefined]);
  });

  it('gives the default Accept to a request that accepts anything', () => {
    const { gateway } = gatewayOver([], () => Promise.reject(new Error('not called')));
    assert.equal(gateway.accept(undefined), 'text/csv');
    assert.equal(gateway.accept(' */* '), 'text/csv');
    assert.equal(gateway.accept('application/json'), 'application/json');
  });

  it('refuses every request while the server shuts down (503)', () => {
    assert.doesNotThrow(() => gatewayOver([], () => Promise.reject(new Error('not called'))).gateway.admit());
    const { gateway } = gatewayOver([], () => Promise.reject(new Error('not called')), true);
    assert.throws(() => gateway.admit(), { code: 'MME_ERR_SHUTTING_DOWN' });
  });

  it('logs a failure with the request id and code, the message only for server faults', () => {
    const { gateway, logs } = gatewayOver([], () => Promise.reject(new Error('not called')));
    const client = gateway.failure(
      new MmeError('MME_ERR_INVALID_INPUT', 'echoes client text'),
      'id-1',
      'POST /models/:name/invoke',
    );
    assert.equal(client.code, 'MME_ERR_INVALID_INPUT');
    const fault = gateway.failure(new Error('a bug'), 'id-2', 'grpc ModelInfer', () => 'INTERNAL');
    assert.equal(fault.code, 'MME_ERR_INTERNAL');
    assert.equal(logs[0], 'request id-1 POST /models/:name/invoke: 400 MME_ERR_INVALID_INPUT');
    assert.match(logs[1], /^internal error: Error: a bug/);
    assert.equal(
      logs[2],
      'request id-2 grpc ModelInfer: INTERNAL MME_ERR_INTERNAL Internal server error; the server log has the details.',
    );
  });
});
