/**
 * The dispatcher (models/dispatcher.ts): the queue's order, the batch window, the job queue's
 * bound, the response timeout and cancellation. Driven through the ModelManager on fake worker
 * processes that speak frames, on a virtual clock: the batch window and the timeouts pass only when
 * the test advances the clock, and what reaches the worker is read from the frames it was sent.
 */
import assert from 'node:assert/strict';
import type { MmeError } from '../../../src/errors';
import { Gateway } from '../../../src/gateway/gateway';
import type { InferMessage } from '../../../src/protocol/messages';
import type { JobOptions } from '../../../src/server/jobs/job';
import type { LoadRequest } from '../../../src/server/models/model-settings';
import {
  answerUntilSettled,
  processHarness,
  statusOf,
  invokeRequest,
  type ProcessHarness,
} from '../../lifecycle/harness';
import type { FakeProcess } from '../../lifecycle/fake-process';
import { waitFor } from '../../../harness/process-probes';
import { testDoor } from '../../helpers/door-request';
import { settle } from '../../helpers/settle';

/** A model `a` loaded with `settings` in one dedicated worker; returns that worker's process. */
async function loaded(
  settings: Partial<LoadRequest>,
  properties = '',
): Promise<{ h: ProcessHarness; worker: FakeProcess }> {
  const h = processHarness(properties, { autoLoad: true });
  await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a'), ...settings });
  const [worker] = h.processes.live();
  return { h, worker: worker };
}

/** Submits a request with its own request id; returns the id and its outcome. */
function submit(
  h: ProcessHarness,
  signal?: AbortSignal,
  opts: JobOptions = {},
): { id: string; outcome: ReturnType<typeof statusOf> } {
  const request = invokeRequest();
  return { id: request.requestId, outcome: statusOf(h.manager.onDemand.invoke('a', request, { signal, ...opts })) };
}

/** A request that asks for a deadline `ms` from now on the harness's clock. */
const within = (h: ProcessHarness, ms: number) => submit(h, undefined, { deadline: h.clock.now() + ms });

const ids = (batch: InferMessage) => batch.requests.map((r) => r.requestId);

type Submitted = ReturnType<typeof submit>;

/** With two batches `sent` in the pipeline, the next one the worker gets holds `kept` alone: a request dropped from the queue never reached it. */
async function onlyKeptFollows(worker: FakeProcess, sent: Submitted[], kept: Submitted): Promise<void> {
  worker.answer();
  assert.equal((await sent[0].outcome).status, 200);
  await waitFor(() => worker.batches.length === 2, 'the next request to reach the worker');
  assert.deepEqual(ids(worker.batches[1]), [kept.id]);
  worker.answer();
  worker.answer();
  assert.equal((await sent[1].outcome).status, 200);
  assert.equal((await kept.outcome).status, 200);
}

async function close(h: ProcessHarness): Promise<void> {
  await h.manager.close(0);
}

describe('dispatcher (fake processes, virtual clock)', () => {
  it('holds a partial batch open for max_batch_delay and sends it the moment it fills, in arrival order', async () => {
    const { h, worker } = await loaded({ batchSize: 3, maxBatchDelay: 100 });
    const first = submit(h);
    const second = submit(h);
    await settle();
    h.clock.advance(99);
    await settle();
    assert.equal(worker.batches.length, 0, 'a batch of 2 of 3 waits inside the window');
    const third = submit(h);
    await waitFor(() => worker.batches.length === 1, 'the full batch');
    assert.deepEqual(ids(worker.batches[0]), [first.id, second.id, third.id]);
    assert.equal(worker.batches[0].independent ?? false, false);
    worker.answer();
    for (const r of [first, second, third]) assert.equal((await r.outcome).status, 200);
    await close(h);
  });

  it('sends what it has when the batch window closes: 2 requests at exactly max_batch_delay', async () => {
    const { h, worker } = await loaded({ batchSize: 4, maxBatchDelay: 100 });
    const first = submit(h);
    const second = submit(h);
    await settle();
    h.clock.advance(99);
    await settle();
    assert.equal(worker.batches.length, 0);
    h.clock.advance(1);
    await waitFor(() => worker.batches.length === 1, 'the batch at the end of the window');
    assert.deepEqual(ids(worker.batches[0]), [first.id, second.id]);
    worker.answer();
    assert.equal((await first.outcome).status, 200);
    assert.equal((await second.outcome).status, 200);
    await close(h);
  });

  it('refuses the request past job_queue_size with 503 MME_ERR_QUEUE_FULL, and sends the queued ones in one frame, oldest first', async () => {
    const { h, worker } = await loaded({ jobQueueSize: 2 });
    // A dedicated worker holds two batches at once (the pipeline depth): the next two wait in the queue.
    const sent = [submit(h), submit(h)];
    await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
    const queued = [submit(h), submit(h)];
    await settle();
    const refused = await submit(h).outcome;
    assert.equal(refused.status, 503);
    assert.equal(refused.code, 'MME_ERR_QUEUE_FULL');
    assert.match(refused.error!.message, /job queue of model a is full \(2 requests waiting\)/);
    assert.equal(worker.batches.length, 2, 'nothing more reached the worker');
    worker.answer();
    assert.equal((await sent[0].outcome).status, 200);
    // batch_size 1 with a backlog: the queued requests share one frame, each run on its own.
    await waitFor(() => worker.batches.length === 2, 'the queued requests to reach the worker');
    assert.deepEqual(
      ids(worker.batches[1]),
      queued.map((q) => q.id),
    );
    assert.equal(worker.batches[1].independent, true);
    worker.answer();
    worker.answer();
    for (const r of [sent[1], ...queued]) assert.equal((await r.outcome).status, 200);
    await close(h);
  });

  /** Model `a` in two workers that have each answered one request as a run of `runMicros`; then 10 requests: 4 fill the pipelines, 6 wait. */
  async function twoWorkersBehind(runMicros: number) {
    const h = processHarness('', { autoLoad: true });
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a'), minWorkers: 2 });
    const workers = h.processes.live();
    assert.equal(workers.length, 2);
    const learn = [submit(h), submit(h)];
    await waitFor(() => workers.every((w) => w.batches.length === 1), 'one request in each worker');
    for (const w of workers) w.answer(runMicros);
    for (const r of learn) assert.equal((await r.outcome).status, 200);
    const sent = Array.from({ length: 10 }, () => submit(h));
    await waitFor(() => workers.every((w) => w.batches.length === 2), 'both pipelines to fill');
    await settle();
    workers[0].answer(runMicros);
    await waitFor(() => workers[0].batches.length === 2, 'the next frame for the first worker');
    return { h, workers, sent, next: workers[0].batches[1] };
  }

  /** Answers what `workers` hold, turn after turn (frames reach them one at a time), until every one of `sent` is settled: each 200. */
  async function answerEvery(workers: FakeProcess[], sent: Submitted[], runMicros: number): Promise<void> {
    const outcomes = await answerUntilSettled(
      sent.map((r) => r.outcome),
      () => {
        for (const w of workers) w.answerHeld(runMicros);
      },
      'every request to be answered',
    );
    for (const o of outcomes) assert.equal(o.status, 200);
  }

  it('with two workers, sends a slow model its queued requests one per frame: none waits behind runs the other worker could take', async () => {
    const { h, workers, sent, next } = await twoWorkersBehind(5000);
    assert.equal(next.requests.length, 1, 'a 5 ms run: one request a frame');
    await answerEvery(workers, sent, 5000);
    await close(h);
  });

  it('with two workers, still coalesces the queued requests of a quick model, up to a millisecond of runs', async () => {
    const quick = await twoWorkersBehind(10);
    assert.equal(quick.next.requests.length, 6, 'every queued request of a 10 µs model in one frame');
    assert.equal(quick.next.independent, true);
    const middling = await twoWorkersBehind(300);
    assert.equal(middling.next.requests.length, 3, '300 µs runs: three to a millisecond');
    for (const { h, workers, sent } of [quick, middling]) {
      await answerEvery(workers, sent, 10);
      await close(h);
    }
  });

  it('times out on the response timeout: a queued request 504 "waited in the queue", the running ones 504 and their worker killed, not a millisecond early', async () => {
    const { h, worker } = await loaded({ responseTimeout: 2 });
    const running = [submit(h), submit(h)];
    await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
    const queued = submit(h);
    await settle();
    h.clock.advance(1999);
    await settle();
    assert.equal(worker.alive, true);
    h.clock.advance(1);
    for (const r of running) {
      const o = await r.outcome;
      assert.equal(o.code, 'MME_ERR_WORKER_TIMEOUT');
      assert.match(o.error!.message, /did not answer within 2 s/);
    }
    const q = await queued.outcome;
    assert.equal(q.code, 'MME_ERR_WORKER_TIMEOUT');
    assert.match(q.error!.message, /waited 2 s in the queue without reaching a worker/);
    await waitFor(() => !worker.alive, 'the worker that ran over to be killed');
    assert.equal(
      h.logs.filter((l) => l.includes('exceeded the 2 s response timeout; killing it')).length,
      2,
      'one line per request that ran over',
    );
    await close(h);
  });

  it('drops a cancelled request from the queue with 499 MME_ERR_CLIENT_CLOSED; it never reaches the worker', async () => {
    const { h, worker } = await loaded({});
    const sent = [submit(h), submit(h)];
    await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
    const client = new AbortController();
    const cancelled = submit(h, client.signal);
    const kept = submit(h);
    await settle();
    client.abort();
    const c = await cancelled.outcome;
    assert.equal(c.status, 499);
    assert.equal(c.code, 'MME_ERR_CLIENT_CLOSED');
    await onlyKeptFollows(worker, sent, kept);
    await close(h);
  });

  it('fails every queued request with the shutdown error when the model closes; none reaches the worker', async () => {
    const { h, worker } = await loaded({});
    const running = [submit(h), submit(h)];
    await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
    const queued = submit(h);
    await settle();
    const closing = h.manager.close(0);
    // The drain of 0 ms is a timer on the virtual clock: it ends when the clock ticks.
    await waitFor(() => {
      h.clock.advance(0);
      return !worker.alive;
    }, 'shutdown to stop the worker');
    const q = await queued.outcome;
    assert.equal(q.code, 'MME_ERR_SHUTTING_DOWN');
    assert.equal(worker.batches.length, 2, 'only the running batches were sent');
    await closing;
    for (const r of running) assert.equal((await r.outcome).code, 'MME_ERR_SHUTTING_DOWN');
  });

  describe("a caller's deadline", () => {
    it('answers a request whose deadline passes while queued 408 MME_ERR_DEADLINE_EXCEEDED, not a millisecond early; it never reaches the worker', async () => {
      const { h, worker } = await loaded({});
      const sent = [submit(h), submit(h)];
      await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
      const late = within(h, 500);
      const kept = submit(h);
      await settle();
      h.clock.advance(499);
      await settle();
      h.clock.advance(1);
      const o = await late.outcome;
      assert.equal(o.status, 408);
      assert.equal(o.code, 'MME_ERR_DEADLINE_EXCEEDED');
      assert.match(o.error!.message, /deadline passed before it reached a worker of model a/);
      await onlyKeptFollows(worker, sent, kept);
      assert.equal(worker.alive, true);
      await close(h);
    });

    it('answers a request already past its deadline (a long on-demand load) 408 at once, unsent', async () => {
      const { h, worker } = await loaded({});
      const o = await submit(h, undefined, { deadline: h.clock.now() }).outcome;
      assert.equal(o.code, 'MME_ERR_DEADLINE_EXCEEDED');
      await settle();
      assert.equal(worker.batches.length, 0);
      await close(h);
    });

    it('cancels a running request at its deadline as on a disconnect: 408 now, a Cancel frame, the worker lives on', async () => {
      const { h, worker } = await loaded({});
      const running = within(h, 300);
      await waitFor(() => worker.batches.length === 1, 'the request to reach the worker');
      const [sentRequest] = worker.batches[0].requests;
      h.clock.advance(300);
      const o = await running.outcome;
      assert.equal(o.code, 'MME_ERR_DEADLINE_EXCEEDED');
      assert.match(o.error!.message, /did not answer within the request's deadline/);
      await waitFor(() => worker.cancels.length === 1, 'the Cancel frame');
      assert.deepEqual(worker.cancels, [sentRequest.id]);
      worker.answer();
      const next = submit(h);
      await waitFor(() => worker.batches.length === 1, 'the next request on the same worker');
      worker.answer();
      assert.equal((await next.outcome).status, 200);
      assert.equal(worker.alive, true);
      await close(h);
    });

    it('keeps the response timeout for a deadline past it (504, the worker killed)', async () => {
      const { h, worker } = await loaded({ responseTimeout: 1 });
      const running = within(h, 5000);
      await waitFor(() => worker.batches.length === 1, 'the request to reach the worker');
      h.clock.advance(1000);
      assert.equal((await running.outcome).code, 'MME_ERR_WORKER_TIMEOUT');
      await waitFor(() => !worker.alive, 'the worker to be killed');
      await close(h);
    });

    it('re-arms for a sooner deadline and serves deadlines out of admission order', async () => {
      const { h, worker } = await loaded({});
      const sent = [submit(h), submit(h)];
      await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
      const later = within(h, 800);
      const sooner = within(h, 200);
      await settle();
      h.clock.advance(200);
      assert.equal((await sooner.outcome).code, 'MME_ERR_DEADLINE_EXCEEDED');
      h.clock.advance(600);
      assert.equal((await later.outcome).code, 'MME_ERR_DEADLINE_EXCEEDED');
      worker.answer();
      worker.answer();
      for (const r of sent) assert.equal((await r.outcome).status, 200);
      await close(h);
    });

    it('caps what a caller asks for at max_request_timeout, counted from when the gateway read it', async () => {
      const { h, worker } = await loaded({});
      const gateway = new Gateway({
        models: h.manager.onDemand,
        server: h.manager.lifecycle,
        metrics: { invocation: () => undefined },
        log: () => undefined,
        defaultAccept: 'application/json',
        controls: { maxRequestTimeoutMs: 1000, priorityLevels: 1 },
        clock: h.clock,
      });
      const sent = [submit(h), submit(h)];
      await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
      const guard = gateway.door({ transport: 'http', loopbackOnly: false, inferenceToken: null });
      const capped = testDoor({ guard, model: 'a', timeout: '60000', payload: { body: Buffer.from('{}') } });
      void gateway.handle(capped.request);
      await settle();
      h.clock.advance(999);
      await settle();
      h.clock.advance(1);
      assert.equal(((await capped.outcome) as MmeError).code, 'MME_ERR_DEADLINE_EXCEEDED');
      worker.answer();
      worker.answer();
      for (const r of sent) assert.equal((await r.outcome).status, 200);
      await close(h);
    });
  });

  describe('priority (priority_levels)', () => {
    it('sends the queued requests best level first, in arrival order within a level; none named = the middle level', async () => {
      const { h, worker } = await loaded({}, 'priority_levels=3');
      const sent = [submit(h), submit(h)];
      await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
      const low = submit(h, undefined, { priority: 2 });
      const plain = submit(h);
      const mid = submit(h, undefined, { priority: 1 });
      const high = submit(h, undefined, { priority: 0 });
      await settle();
      worker.answer();
      await waitFor(() => worker.batches.length === 2, 'the queued requests to reach the worker');
      assert.deepEqual(ids(worker.batches[1]), [high.id, plain.id, mid.id, low.id]);
      worker.answer();
      worker.answer();
      for (const r of [...sent, low, plain, mid, high]) assert.equal((await r.outcome).status, 200);
      await close(h);
    });

    it('ages: a low-priority request that waited priority_aging_ms per level goes before a newer high one', async () => {
      const { h, worker } = await loaded({}, 'priority_levels=3\npriority_aging_ms=100');
      const sent = [submit(h), submit(h)];
      await waitFor(() => worker.batches.length === 2, 'the pipeline to fill');
      const low = submit(h, undefined, { priority: 2 });
      await settle();
      h.clock.advance(200);
      const high = submit(h, undefined, { priority: 0 });
      await settle();
      worker.answer();
      await waitFor(() => worker.batches.length === 2, 'the queued requests to reach the worker');
      assert.deepEqual(ids(worker.batches[1]), [low.id, high.id]);
      worker.answer();
      worker.answer();
      for (const r of [...sent, low, high]) assert.equal((await r.outcome).status, 200);
      await close(h);
    });
  });
});
