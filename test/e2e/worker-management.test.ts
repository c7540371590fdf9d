/**
 * MMS-grade worker management against real worker processes: bounded queues, job tickets,
 * timeouts, crash recovery with back-off, scaling. Fault fixtures (harness/fault-handlers.ts)
 * make workers slow, hang, crash or die on demand; a barrier file holds a worker busy until the
 * test releases it, so ordering never depends on timing.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../harness/fault-handlers';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { isAlive, waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, type JsonResponse, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

describe('worker management', () => {
  let t: TestServer;
  let barrier: string;
  let n = 0;

  beforeEach(async () => {
    t = await startTestServer();
    barrier = path.join(tempDir('mme-barrier-'), 'open');
  });
  afterEach(async () => {
    fs.writeFileSync(barrier, '');
    await t.close();
  });

  async function loadBehaviour(extra: Record<string, unknown> = {}): Promise<string> {
    const name = `b${++n}`;
    const res = await loadModel(
      t,
      name,
      writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler }),
      extra,
    );
    assert.equal(res.status, 200, res.text);
    return name;
  }

  /**
   * Sends a request that occupies the model's only worker until release(), plus fillers for the
   * worker's pipeline slots, so that the next request waits in the model's queue. Resolves once all
   * of them have reached the worker.
   */
  async function hold(
    name: string,
  ): Promise<{ response: Promise<JsonResponse>; fillers: Array<Promise<JsonResponse>> }> {
    const model = t.server.manager.registry.get(name);
    const slots = model.workers[0].capacity;
    const response = invoke(t, name, { barrier, echo: 'held' });
    await waitFor(() => model.inFlightRequests === 1, 'the held request to reach the worker');
    const fillers = Array.from({ length: slots - 1 }, (_, i) => invoke(t, name, { barrier, echo: `filler${i}` }));
    await waitFor(() => model.inFlightRequests === slots, 'the worker pipeline to fill');
    return { response, fillers };
  }

  const release = () => fs.writeFileSync(barrier, '');

  it('answers 503 at once when the queue is full, and every admitted request 200', async () => {
    const name = await loadBehaviour({ job_queue_size: 5 });
    const { response: held, fillers } = await hold(name);
    const model = t.server.manager.registry.get(name);
    let refusedSoFar = 0;
    const sent = Array.from({ length: 10 }, (_, i) =>
      invoke(t, name, { echo: i }).then((r) => {
        if (r.status === 503) refusedSoFar++;
        return r;
      }),
    );
    // Release only once every request has been admitted or refused, so no slot frees up mid-burst.
    await waitFor(() => model.queueLength + refusedSoFar === 10, 'all ten requests to be admitted or refused');
    release();
    const burst = await Promise.all(sent);
    const refused = burst.filter((r) => r.status === 503);
    const served = burst.filter((r) => r.status === 200);
    assert.equal(refused.length, 5);
    assert.equal(served.length, 5);
    assert.equal((await held).status, 200);
    for (const f of await Promise.all(fillers)) assert.equal(f.status, 200);
    assert.equal(refused[0].body.errorCode, 'MME_ERR_QUEUE_FULL');
    assert.match(refused[0].body.message, /job queue .* is full \(5 requests waiting\).*job_queue_size/);
  });

  it('with job tickets, admits a request only when a worker is idle', async () => {
    const name = await loadBehaviour({ use_job_ticket: true });
    const model = t.server.manager.registry.get(name);
    const held = invoke(t, name, { barrier, echo: 'held' });
    await waitFor(() => model.inFlightRequests === 1, 'the held request to reach the worker');
    const refused = await invoke(t, name, { echo: 1 });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.errorCode, 'MME_ERR_NO_WORKER');
    release();
    assert.equal((await held).status, 200);
    assert.equal((await invoke(t, name, { echo: 2 })).status, 200);
  });

  it('drops a queued request whose client went away, without running it', async () => {
    const name = await loadBehaviour();
    const { response: held, fillers } = await hold(name);
    const marker = path.join(path.dirname(barrier), 'ran');
    const abort = new AbortController();
    const model = t.server.manager.registry.get(name);
    const gone = fetch(`${t.url}/models/${name}/invoke`, {
      method: 'POST',
      body: JSON.stringify({ touch: marker }),
      headers: { 'content-type': 'application/json' },
      signal: abort.signal,
    }).catch((e) => e);
    await waitFor(() => model.queueLength === 1, 'the request to be queued');
    abort.abort();
    await gone;
    await waitFor(() => model.queueLength === 0, 'the abandoned request to leave the queue');
    release();
    await Promise.all([held, ...fillers]);
    assert.equal((await invoke(t, name, { echo: 'after' })).status, 200);
    assert.equal(fs.existsSync(marker), false, 'the abandoned request ran');
  });

  it('kills and replaces a worker that exceeds the response timeout', async () => {
    const name = await loadBehaviour({ response_timeout: 1 });
    const [before] = workerPidsOf(process.pid);
    const res = await invoke(t, name, { hang: true });
    assert.equal(res.status, 504);
    assert.equal(res.body.errorCode, 'MME_ERR_WORKER_TIMEOUT');
    assert.match(res.body.message, /did not answer within 1 s/);
    await waitFor(() => !isAlive(before), 'the hung worker to be killed');
    // The replacement's start would count against this model's 1 s response timeout on a busy machine.
    const model = t.server.manager.registry.get(name);
    await waitFor(() => model.workers.some((w) => w.pid !== before && w.state === 'ready'), 'the replacement worker');
    const after = await invoke(t, name, { echo: 'alive' });
    assert.equal(after.status, 200);
    assert.notEqual(after.body.pid, before);
  });

  it('counts queue wait against the response timeout', async () => {
    const name = await loadBehaviour({ response_timeout: 1 });
    const model = t.server.manager.registry.get(name);
    const slots = model.workers[0].capacity;
    const held = invoke(t, name, { sleepMs: 3000 });
    const fillers = Array.from({ length: slots - 1 }, () => invoke(t, name, { sleepMs: 3000 }));
    await waitFor(() => model.inFlightRequests === slots, 'the slow requests to fill the worker');
    const queued = await invoke(t, name, { echo: 'late' });
    await Promise.all(fillers);
    assert.equal(queued.status, 504);
    assert.match(queued.body.message, /waited 1 s in the queue/);
    assert.equal((await held).status, 504);
  });

  it('fails only the in-flight request when its worker is SIGKILLed (507), and serves every queued one', async () => {
    const name = await loadBehaviour();
    const { response: held, fillers } = await hold(name);
    const model = t.server.manager.registry.get(name);
    const queued = Array.from({ length: 5 }, (_, i) => invoke(t, name, { echo: i }));
    await waitFor(() => model.queueLength === 5, 'five queued requests');
    const [pid] = workerPidsOf(process.pid);
    process.kill(pid, 'SIGKILL');
    const first = await held;
    release(); // the fillers, which were only waiting in the dead worker's pipe, run again
    for (const f of await Promise.all(fillers)) assert.equal(f.status, 200, 'a request that had not started was lost');
    assert.equal(first.status, 507);
    assert.equal(first.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
    const rest = await Promise.all(queued);
    assert.deepEqual(
      rest.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    assert.deepEqual(
      rest.map((r) => r.body.echo),
      [0, 1, 2, 3, 4],
    );
    assert.ok(rest.every((r) => r.body.pid !== pid));
  });

  it('answers 500 when the worker crashes on an input, then keeps serving', async () => {
    const name = await loadBehaviour();
    const crash = await invoke(t, name, { exit: 1 });
    assert.equal(crash.status, 500);
    assert.equal(crash.body.errorCode, 'MME_ERR_WORKER_DIED');
    assert.match(crash.body.message, /exited with code 1/);
    assert.equal((await invoke(t, name, { echo: 'next' })).status, 200);
  });

  it('keeps a handler-raised status for that request alone', async () => {
    const name = await loadBehaviour();
    const res = await invoke(t, name, { fail: 'quota exceeded', status: 429 });
    assert.equal(res.status, 429);
    assert.match(res.body.message, /quota exceeded/);
    assert.doesNotMatch(res.text, /at .*\.js:\d+/, 'no stack trace');
  });

  it('backs off restarts of a crash-looping worker, marks the model failed, and recovers', async () => {
    const name = await loadBehaviour();
    fs.writeFileSync(path.join(t.store, name, 'crash-on-init'), '');
    const failures = () => t.logs.filter((l) => l.includes(`[${name}] replacement worker failed to load`)).length;
    process.kill(workerPidsOf(process.pid)[0], 'SIGKILL');
    // Counted when the model turns failed: the restarts go on after that, 2 s apart.
    let failuresAtFailed = -1;
    await waitFor(
      () => {
        if (t.server.manager.registry.current(name)?.phase !== 'failed') return false;
        failuresAtFailed = failures();
        return true;
      },
      'the model to be marked failed',
      15_000,
    );
    assert.equal(failuresAtFailed, 3);
    // The Fibonacci back-off's 0, 1 and 1 s are checked on the virtual clock in test/server/workers/worker-set.test.ts.
    const refused = await invoke(t, name, { echo: 1 });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.errorCode, 'MME_ERR_MODEL_FAILED');
    assert.match(refused.body.message, /exited with code 4/);
    assert.equal((await request(`${t.url}/models/${name}`)).body.status, 'FAILED');
    fs.rmSync(path.join(t.store, name, 'crash-on-init'));
    await waitFor(
      () => t.server.manager.registry.current(name)?.phase === 'ready',
      'the model to recover after the next back-off',
      15_000,
    );
    assert.equal((await invoke(t, name, { echo: 'back' })).status, 200);
  });

  it('scales workers up and down with PUT /models/{name}', async () => {
    const name = await loadBehaviour();
    const up = await request(`${t.url}/models/${name}?min_worker=3&max_worker=3&synchronous=true`, { method: 'PUT' });
    assert.equal(up.status, 200);
    assert.equal(workerPidsOf(process.pid).length, 3);
    const described = await request(`${t.url}/models/${name}`);
    assert.equal(described.body.workers.length, 3);
    for (const w of described.body.workers) {
      assert.equal(w.status, 'READY');
      assert.ok(w.memoryUsage > 0);
      assert.ok(Date.parse(w.startTime) > 0);
      assert.equal(fs.readFileSync(`/proc/${w.pid}/oom_score_adj`, 'utf8').trim(), '900');
    }
    const down = await request(`${t.url}/models/${name}?min_worker=1&synchronous=true`, { method: 'PUT' });
    assert.equal(down.status, 200);
    assert.equal(workerPidsOf(process.pid).length, 1);
    const async = await request(`${t.url}/models/${name}?min_worker=2&max_worker=2`, { method: 'PUT' });
    assert.equal(async.status, 202);
    await waitFor(
      () => t.server.manager.registry.get(name).workers.filter((w) => w.state === 'ready').length === 2,
      'the second worker to load',
    );
    assert.equal(workerPidsOf(process.pid).length, 2);
    assert.equal((await request(`${t.url}/models/${name}?min_worker=3&max_worker=2`, { method: 'PUT' })).status, 400);
    assert.equal((await request(`${t.url}/models/ghost?min_worker=1`, { method: 'PUT' })).status, 404);
    assert.equal((await request(`${t.url}/models/${name}?min_worker=-1`, { method: 'PUT' })).status, 400);
  });

  it("spreads requests over a model's workers", async () => {
    const name = await loadBehaviour({ initial_workers: 2 });
    const results = await Promise.all(Array.from({ length: 8 }, () => invoke(t, name, { sleepMs: 50 })));
    assert.equal(new Set(results.map((r) => r.body.pid)).size, 2);
  });
});
