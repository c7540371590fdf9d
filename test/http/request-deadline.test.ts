/**
 * A caller's deadline and priority through the HTTP door, on a real server with real workers:
 * X-Request-Timeout (milliseconds) and X-Request-Priority on every invoke route, OIP v2
 * parameters.timeout (microseconds) and parameters.priority on /v2 infer. Deadlines here are real
 * time, but nothing waits for time: each test waits for what the worker wrote, and a test that needs
 * the request running at its deadline lengthens the deadline until the request reached the handler.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { holdingHandler } from '../../harness/fault-handlers';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { type JsonResponse, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

const kV2Input = { inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16], data: new Array(16).fill(1) }] };

describe('request deadline and priority: the HTTP door', () => {
  let t: TestServer;
  const dir = tempDir('mme-deadline-');
  const logOf = (model: string) => path.join(dir, `${model}.log`);
  const releaseOf = (model: string) => path.join(dir, `${model}.release`);
  const lines = (model: string) =>
    fs.existsSync(logOf(model)) ? fs.readFileSync(logOf(model), 'utf8').split('\n') : [];

  before(async () => {
    t = await startTestServer('priority_levels=3\nmax_request_timeout=60');
    const models = ['queued', 'running', 'v2'];
    const loads = models.map((m) =>
      loadModel(t, m, writeModelDir(t.store, m, addModel(), { 'handler.js': holdingHandler(logOf(m), releaseOf(m)) })),
    );
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    for (const m of ['queued', 'running', 'v2']) fs.writeFileSync(releaseOf(m), '');
    await t.close();
  });

  /**
   * Sends with deadlines doubling from 200 ms until one passes while the handler holds the request: on
   * a busy machine a short one may pass in the queue (the first test's case, checked here as well).
   */
  async function runningAtDeadline(model: string, send: (ms: number, tag: string) => Promise<JsonResponse>) {
    for (let ms = 200; ms <= 12_800; ms *= 2) {
      const tag = `slow${ms}`;
      const r = await send(ms, tag);
      assert.equal(r.status, 408, r.text);
      if (!/deadline passed before it reached a worker/.test(r.text)) return { r, tag };
      assert.ok(!lines(model).includes(tag), `${tag} expired in the queue yet reached the handler`);
    }
    return assert.fail('no deadline up to 12.8 s let the request reach the handler before it passed');
  }

  const invoke = (model: string, tag: string, headers: Record<string, string> = {}) =>
    request(`${t.url}/models/${model}/invoke`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', 'x-test-tag': tag, ...headers },
    });

  it('X-Request-Timeout: a request still queued at its deadline is 408 MME_ERR_DEADLINE_EXCEEDED and never runs', async () => {
    const model = t.server.manager.registry.get('queued');
    const held = [invoke('queued', 'a1'), invoke('queued', 'a2')];
    await waitFor(
      () => lines('queued').includes('a1') && model.inFlightRequests + model.queueLength === 2,
      'the worker to be busy',
    );
    const late = await invoke('queued', 'late', { 'x-request-timeout': '100', 'x-request-priority': '1' });
    assert.equal(late.status, 408, late.text);
    assert.equal((late.body as { errorCode: string }).errorCode, 'MME_ERR_DEADLINE_EXCEEDED');
    assert.match(late.text, /deadline passed before it reached a worker of model queued/);
    fs.writeFileSync(releaseOf('queued'), '');
    for (const r of await Promise.all(held)) assert.equal(r.status, 200, r.text);
    assert.ok(!lines('queued').includes('late'), 'the late request never reached the handler');
  });

  it('X-Request-Timeout: a request running at its deadline is 408 and its handler sees isCancelled; the worker lives on', async () => {
    const pid = t.server.manager.registry.get('running').workers[0].pid;
    const { r, tag } = await runningAtDeadline('running', (ms, tag) =>
      invoke('running', tag, { 'x-request-timeout': String(ms) }),
    );
    assert.match(r.text, /did not answer within the request's deadline/);
    await waitFor(() => lines('running').includes(`cancelled ${tag}`), 'the handler to see the cancellation');
    fs.writeFileSync(releaseOf('running'), '');
    assert.equal((await invoke('running', 'next')).status, 200);
    assert.equal(t.server.manager.registry.get('running').workers[0].pid, pid, 'the same worker process');
  });

  it('v2 infer: parameters.timeout in microseconds cancels the running request with 408', async () => {
    const { tag } = await runningAtDeadline('v2', (ms, tag) =>
      request(`${t.url}/v2/models/v2/infer`, {
        method: 'POST',
        json: { ...kV2Input, parameters: { timeout: ms * 1000, priority: 1 } },
        headers: { 'x-test-tag': tag },
      }),
    );
    await waitFor(() => lines('v2').includes(`cancelled ${tag}`), 'the handler to see the cancellation');
  });

  it('refuses a bad timeout or priority with 400 that says what to send, quoting at most 100 characters', async () => {
    const cases: Array<[Promise<{ status: number; text: string }>, RegExp]> = [
      [
        invoke('running', 'x', { 'x-request-timeout': 'soon' }),
        /X-Request-Timeout is \\"soon\\"; set it to a whole number of milliseconds/,
      ],
      [invoke('running', 'x', { 'x-request-timeout': '-5' }), /X-Request-Timeout is \\"-5\\"/],
      [invoke('running', 'x', { 'x-request-timeout': '9'.repeat(500) }), /… \(500 characters\)/],
      [invoke('running', 'x', { 'x-request-priority': '4' }), /from 1 \(first\) to 3 \(priority_levels\)/],
      [
        request(`${t.url}/v2/models/v2/infer`, { method: 'POST', json: { ...kV2Input, parameters: { timeout: 1.5 } } }),
        /parameters.timeout is 1.5; set it to a whole number of microseconds/,
      ],
      [
        request(`${t.url}/v2/models/v2/infer`, {
          method: 'POST',
          json: { ...kV2Input, parameters: { priority: 'high' } },
        }),
        /parameters.priority is \\"high\\"/,
      ],
    ];
    for (const [answer, message] of cases) {
      const r = await answer;
      assert.equal(r.status, 400, r.text);
      assert.match(r.text, message);
      assert.ok(r.text.length < 600, 'the message quotes a bounded part of the value');
    }
  });
});
