/**
 * The bugs part 9 removed, each reproduced against real worker processes: oversized and coalesced
 * answers, client disconnects, request ids, the load-failure loop, the unload bound and the
 * shutdown bound.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { behaviourHandler, hangsWhileLoading } from '../../harness/fault-handlers';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

describe('lifecycle regressions (real processes)', () => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  async function behaviour(name: string, extra: Record<string, unknown> = {}): Promise<void> {
    const res = await loadModel(
      t,
      name,
      writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler }),
      extra,
    );
    assert.equal(res.status, 200, res.text);
  }

  it('ten concurrent ~1 MB answers under max_response_size=3 MB all succeed, coalesced or not, and the worker stays', async () => {
    t = await startTestServer('max_response_size=3000000');
    await behaviour('big');
    const [pid] = workerPidsOf(process.pid);
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => invoke(t, 'big', { echo: i, pad: 1_000_000 })),
    );
    for (const r of replies) assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.deepEqual(
      replies.map((r) => r.body.echo),
      [...Array(10).keys()],
    );
    assert.deepEqual(workerPidsOf(process.pid), [pid]);
  });

  it('requests that travel to the worker together are each answered as soon as they are ready, not with the others', async () => {
    t = await startTestServer();
    await behaviour('slow');
    const model = t.server.manager.registry.get('slow');
    const gates = tempDir('mme-gates-');
    const gate = (i: number) => path.join(gates, `g${i}`);
    const answered = new Set<number>();
    const send = (i: number) =>
      invoke(t, 'slow', { barrier: gate(i), echo: i }).then((r) => {
        answered.add(i);
        return r;
      });
    // r0 runs and r1 waits in the worker's pipe; r2…r9 queue, then travel in one frame.
    const first = [send(0), send(1)];
    await waitFor(() => model.inFlightRequests === 2, 'r0 running and r1 in the pipe');
    const batches = model.stats.batches;
    const rest = [2, 3, 4, 5, 6, 7, 8, 9].map(send);
    await waitFor(() => model.queueLength === 8, 'eight queued requests');
    fs.writeFileSync(gate(0), '');
    fs.writeFileSync(gate(1), '');
    await Promise.all(first);
    await waitFor(() => model.queueLength === 0, 'the eight to be dispatched');
    assert.equal(model.stats.batches - batches, 1, 'the eight queued requests travelled in one frame');
    // r2 can finish; r3…r9 cannot yet. r2's answer must not wait for them.
    fs.writeFileSync(gate(2), '');
    assert.equal((await rest[0]).body.echo, 2);
    assert.deepEqual([...answered].sort(), [0, 1, 2]);
    for (let i = 3; i < 10; i++) fs.writeFileSync(gate(i), '');
    for (const [k, r] of (await Promise.all(rest)).entries()) assert.equal(r.body.echo, k + 2);
  });

  it('one answer over max_response_size is 500 MME_ERR_RESPONSE_TOO_LARGE for that request alone, never 507, and the worker stays', async () => {
    t = await startTestServer('max_response_size=3000000');
    await behaviour('big');
    const [pid] = workerPidsOf(process.pid);
    const [tooBig, fine] = await Promise.all([invoke(t, 'big', { pad: 4_000_000 }), invoke(t, 'big', { echo: 'ok' })]);
    assert.equal(tooBig.status, 500, tooBig.text.slice(0, 300));
    assert.equal(tooBig.body.errorCode, 'MME_ERR_RESPONSE_TOO_LARGE');
    assert.match(tooBig.body.message, /over max_response_size \(3000000\)/);
    assert.equal(fine.status, 200);
    assert.deepEqual(workerPidsOf(process.pid), [pid]);
  });

  it('a worker that breaks the frame protocol is stopped with the reason protocol-error: 500, not 507, and is replaced', async () => {
    t = await startTestServer();
    // Writes a frame header claiming 4 GiB on the worker's channel (fd 3), past any frame limit.
    const garbler = `exports.handle = async (requests) => { require('node:fs').writeSync(3, Buffer.from([0xff, 0xff, 0xff, 0xff, 12])); await new Promise(() => undefined); };\n`;
    assert.equal(
      (await loadModel(t, 'garbles', writeModelDir(t.store, 'garbles', addModel(), { 'handler.js': garbler }))).status,
      200,
    );
    const [pid] = workerPidsOf(process.pid);
    const res = await invoke(t, 'garbles', {});
    assert.equal(res.status, 500, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_WORKER_PROTOCOL');
    assert.ok(
      t.logs.some((l) => /protocol error: frame of 4294967295 bytes exceeds the limit/.test(l)),
      t.logs.join('\n'),
    );
    await waitFor(
      () => workerPidsOf(process.pid).length === 1 && workerPidsOf(process.pid)[0] !== pid,
      'the replacement worker',
    );
  });

  it('a client that disconnects is a cancellation (499), not a 4xx in the metrics', async () => {
    t = await startTestServer();
    await behaviour('held');
    const gate = path.join(tempDir('mme-gate-'), 'open');
    const statuses: number[] = [];
    const record = t.server.metrics.invocation.bind(t.server.metrics);
    t.server.metrics.invocation = (e) => {
      statuses.push(e.status);
      record(e);
    };
    // One request running and one waiting in the worker's pipe: the next one queues.
    const busy = [invoke(t, 'held', { barrier: gate }), invoke(t, 'held', { barrier: gate })];
    await waitFor(
      () => t.server.manager.registry.get('held').inFlightRequests === 2,
      'the worker and its pipe to be busy',
    );
    const body = JSON.stringify({ echo: 'gone' });
    const req = http.request(`${t.url}/models/held/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': body.length },
    });
    req.on('error', () => undefined);
    req.end(body);
    await waitFor(() => t.server.manager.registry.get('held').queueLength === 1, 'the second request to queue');
    req.destroy();
    await waitFor(() => statuses.length === 1, 'the cancelled request to be recorded');
    assert.deepEqual(statuses, [499]);
    fs.writeFileSync(gate, '');
    for (const r of await Promise.all(busy)) assert.equal(r.status, 200);
    assert.ok(
      t.logs.some((l) => / 499 MME_ERR_CLIENT_CLOSED$/.test(l)),
      t.logs.join('\n'),
    );
  });

  it('the request id reaches the handler, every error log line and the access log', async () => {
    t = await startTestServer('access_log=true');
    await behaviour('ids');
    const ok = await invoke(t, 'ids', { requestId: true });
    assert.equal(ok.body.requestId, ok.headers.get('x-request-id'));
    const failed = await invoke(t, 'ids', { fail: 'nope', status: 422 });
    const id = failed.headers.get('x-request-id')!;
    assert.ok(
      t.logs.some((l) => l.includes(`request ${id} POST /models/:name/invoke: 422 MME_ERR_INVALID_INPUT`)),
      t.logs.join('\n'),
    );
    assert.ok(
      t.logs.some(
        (l) =>
          l.startsWith('ACCESS /') &&
          l.includes('"POST /models/ids/invoke HTTP/1.1" 422') &&
          l.endsWith(`request-id=${id}`),
      ),
      t.logs.join('\n'),
    );
  });

  it('with load_failure_cache_seconds=0, an invoke of a broken model answers its 400 after one load', async () => {
    const store = tempDir('mme-store-');
    fs.mkdirSync(path.join(store, 'broken'));
    fs.writeFileSync(path.join(store, 'broken', 'model.onnx'), 'not an onnx file');
    t = await startTestServer('model_cache=on\nload_failure_cache_seconds=0', { store });
    const res = await invoke(t, 'broken', {});
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_INVALID_MODEL');
    assert.equal(t.server.manager.events.stats.loadFailures, 1);
  });

  it('unload answers 408 at unregister_model_timeout with the running request stopped and no process left', async () => {
    t = await startTestServer('unregister_model_timeout=1');
    await behaviour('stuck');
    const busy = invoke(t, 'stuck', { hang: true });
    await waitFor(() => t.server.manager.registry.get('stuck').inFlightRequests === 1, 'the worker to be busy');
    const res = await request(`${t.url}/models/stuck`, { method: 'DELETE' });
    assert.equal(res.status, 408, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_UNLOAD_TIMEOUT');
    assert.equal((await busy).status, 503);
    assert.deepEqual(workerPidsOf(process.pid), []);
    assert.equal((await request(`${t.url}/models/stuck`)).status, 404);
  });

  it('shutdown during a load that would take model_load_timeout (120 s) ends at once: the load is 503, no process is left', async () => {
    t = await startTestServer();
    const loading = loadModel(
      t,
      'hangs',
      writeModelDir(t.store, 'hangs', addModel(), { 'handler.js': hangsWhileLoading }),
    );
    await waitFor(() => workerPidsOf(process.pid).length === 1, 'the worker to start loading');
    await t.server.close(1000);
    const res = await loading.catch((err: Error) => ({ status: 0, text: err.message, body: null }));
    // The listener closes with the shutdown: the client sees 503, or a connection closed after it.
    assert.ok(res.status === 503 || res.status === 0, res.text);
    assert.deepEqual(workerPidsOf(process.pid), []);
  });
});
