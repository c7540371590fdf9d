/**
 * The gateway on its own, driven through handle() by a door written in the test, with a model
 * manager reduced to what the gateway asks of it: the order in which it asks a door for its parts,
 * the one invocation metric, the trace, the controls, the Accept default, the refusal during
 * shutdown and the error line. The doors' use of it runs on real servers in test/http and test/grpc.
 */
import assert from 'node:assert/strict';
import { MmeError } from '../../src/errors';
import { Gateway, type GatewayOptions } from '../../src/gateway/gateway';
import type { InvocationTrace, RequestTracer } from '../../src/gateway/tracing';
import { realClock } from '../../src/util/clock';
import type { InvokeRequest } from '../../src/protocol/messages';
import type { JobOptions } from '../../src/server/jobs/job';
import type { ManagerEvents } from '../../src/server/models/lifecycle-events';
import { statusGiven, testDoor, type TestRequest } from '../helpers/door-request';
import { recorder } from '../metrics/helpers';

const kAnswer = {
  status: 200,
  contentType: 'text/plain',
  headers: {},
  body: Buffer.from('ok'),
  modelMicros: 1000,
  queueMicros: 300,
  batchSize: 2,
};

function gatewayOver(
  known: string[],
  invoke: GatewayOptions['models']['invoke'],
  more: Partial<GatewayOptions> & { closing?: boolean } = {},
) {
  const { r, sink } = recorder();
  const logs: string[] = [];
  const gateway = new Gateway({
    models: { knows: (name) => known.includes(name), invoke },
    server: { closing: more.closing ?? false },
    metrics: r,
    log: (line) => logs.push(line),
    defaultAccept: 'text/csv',
    tracer: null,
    ...more,
  });
  const guard = gateway.door({ transport: 'http', loopbackOnly: true, inferenceToken: null });
  /** Handles one request and gives what its door was given back, and what the gateway asked it for. */
  const handle = async (t: Partial<TestRequest> = {}) => {
    const door = testDoor({ guard, ...t });
    await gateway.handle(door.request);
    return { outcome: await door.outcome, asked: door.asked };
  };
  return { gateway, handle, r, sink, logs };
}

const notCalled = () => Promise.reject(new Error('not called'));

describe('gateway', () => {
  it("the recorder is the model manager's events object as it is (manager.events.sink = recorder)", () => {
    const events: ManagerEvents = recorder().r;
    assert.equal(typeof events.cacheLookup, 'function');
  });

  it('asks a door for its parts in order, and reads no body of a request it refuses', async () => {
    const { handle } = gatewayOver(['m'], async () => kAnswer);
    assert.deepEqual((await handle()).asked, ['knock', 'target', 'body', 'answer']);
    const unknown = await handle({ model: 'x' });
    assert.deepEqual([unknown.asked, statusGiven(unknown.outcome)], [['knock', 'target', 'fail'], 404]);
    const badTimeout = await handle({ timeout: 'soon' });
    assert.deepEqual([badTimeout.asked, statusGiven(badTimeout.outcome)], [['knock', 'target', 'fail'], 400]);
    const badPriority = await handle({ priority: '7' });
    assert.deepEqual([badPriority.asked, statusGiven(badPriority.outcome)], [['knock', 'target', 'fail'], 400]);
    const noModel = await handle({ model: null });
    assert.deepEqual([noModel.asked, noModel.outcome], [['knock', 'target', 'answer'], null]);
    const closing = gatewayOver(['m'], notCalled, { closing: true });
    const refused = await closing.handle();
    assert.deepEqual([refused.asked, (refused.outcome as MmeError).code], [['knock', 'fail'], 'MME_ERR_SHUTTING_DOWN']);
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

    it('counts each invocation that named a model once, with the status the client got, errors included', async () => {
      let fail: MmeError | null = null;
      const { handle, r, sink } = gatewayOver(['m'], async (name, request) => {
        assert.equal(name, 'm');
        assert.equal(request.id, 0, "the frame id is the job's to give");
        if (fail) throw fail;
        // 5 ms pass in the model manager, 1 ms of them in the model (modelMicros).
        virtualMs += 5;
        return kAnswer;
      });
      for (let i = 0; i < 2; i++) assert.equal(statusGiven((await handle()).outcome), 200);
      fail = new MmeError('MME_ERR_SHUTTING_DOWN', 'closing');
      assert.equal(statusGiven((await handle()).outcome), 503);
      assert.equal(statusGiven((await handle({ model: 'some client text' })).outcome), 404);
      // Refused before it named a model (a door's own refusal, a wrong version): no invocation.
      assert.equal(statusGiven((await handle({ refusal: new MmeError('MME_ERR_FORBIDDEN', 'refused') })).outcome), 403);
      await r.flush();
      const stats = sink.stats(0);
      assert.equal(stats.Invocations.sum, 4, 'two answered, one failed, one for a model the server does not know');
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

  it("hands each request to the tracer once, in time order, with the caller's trace context, refusals included", async () => {
    const traces: InvocationTrace[] = [];
    const tracer = { record: (t: InvocationTrace) => traces.push(t) } as unknown as RequestTracer;
    const result = { ...kAnswer, workerPid: 42 };
    const { handle } = gatewayOver(['m'], async () => result, { tracer });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await handle({ requestId: 'rid', headers: { traceparent, tracestate: ['a=1', 'b=2'] } });
    await handle({ model: 'x' });
    await handle({ refusal: new MmeError('MME_ERR_METHOD_NOT_ALLOWED', 'refused') });
    await handle({ model: null });
    assert.equal(traces.length, 3, 'the answered one, the 404 and the 405; one answered without a model is none');
    const [t, t404, t405] = traces;
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
    assert.deepEqual([t405.model, t405.status, t405.runStart], ['', 405, 0]);
  });

  it('hands the model its frame and the controls: default Accept, OIP parameters from the JSON header, the soonest deadline', async () => {
    const seen: Array<{ frame: InvokeRequest; job: JobOptions }> = [];
    const { handle } = gatewayOver(
      ['m'],
      async (_name, frame, job) => {
        seen.push({ frame, job: job! });
        return kAnswer;
      },
      { clock: { ...realClock, now: () => 1000 }, controls: { maxRequestTimeoutMs: 0, priorityLevels: 3 } },
    );
    await handle({ payload: { accept: ' */* ' }, timeout: '50', priority: '3' });
    await handle({ payload: { accept: 'application/json' }, deadlineMs: 20 });
    const header = Buffer.from(JSON.stringify({ inputs: [], parameters: { timeout: 10_000, priority: 1 } }));
    await handle({ payload: { headers: {}, body: [header, Buffer.from('tensor')], oipHeaderLength: header.length } });
    assert.deepEqual(
      seen.map(({ frame, job }) => [frame.accept, job.deadline, job.priority]),
      [
        ['text/csv', 1050, 2],
        ['application/json', 1020, undefined],
        ['application/vnd.sagemaker-triton.binary+json', 1010, 0],
      ],
    );
    assert.equal(
      seen[2].frame.contentType,
      `application/vnd.sagemaker-triton.binary+json;json-header-size=${header.length}`,
    );
    assert.equal(seen[0].job.onChunk, undefined, 'a door that streams nothing gets no chunks');
  });

  it('logs a failure with the request id and code, the message only for server faults, and what the door showed', async () => {
    const { handle, logs, r, sink } = gatewayOver(['m'], async () => kAnswer);
    const client = await handle({
      requestId: 'id-1',
      refusal: new MmeError('MME_ERR_INVALID_INPUT', 'echoes client text'),
    });
    assert.equal((client.outcome as MmeError).code, 'MME_ERR_INVALID_INPUT');
    const fault = await handle({ requestId: 'id-2', answerFault: new Error('a bug'), shown: () => 'INTERNAL' });
    assert.deepEqual(fault.asked, ['knock', 'target', 'body', 'answer', 'fail']);
    assert.equal((fault.outcome as MmeError).code, 'MME_ERR_INTERNAL');
    assert.equal(logs[0], 'request id-1 POST /models/:name/invoke: 400 MME_ERR_INVALID_INPUT');
    assert.match(logs[1], /^internal error: Error: a bug/);
    assert.equal(
      logs[2],
      'request id-2 POST /models/:name/invoke: INTERNAL MME_ERR_INTERNAL Internal server error; the server log has the details.',
    );
    await r.flush();
    assert.equal(
      sink.stats(0).Invocations.sum,
      1,
      "the run answered 200: a door's failure to encode it counts as that",
    );
  });
});
