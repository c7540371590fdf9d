/**
 * The lean invoke route (src/http/lean-invoke.ts) answers exactly as Koa's route does. A query
 * string sends the same request through Koa, so each case is asked both ways and the answers
 * compared whole: status, every header but the ones that differ by nature (Date, x-request-id),
 * body, the error log line and the invocation metrics.
 */
import assert from 'node:assert/strict';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { loadModel } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

/** Answers what the request asks for: status, content type, headers, body, or a failure. */
const headHandler = `
exports.handle = async (requests, ctx) => requests.map((req, i) => {
  const cmd = JSON.parse(req.body.toString() || '{}');
  if (cmd.fail) { const e = new Error(cmd.fail); if (cmd.status) e.status = cmd.status; return e; }
  if (cmd.status) ctx.setResponseStatus(i, cmd.status);
  if (cmd.contentType !== undefined) ctx.setResponseContentType(i, cmd.contentType);
  for (const [k, v] of Object.entries(cmd.headers ?? {})) ctx.setResponseHeader(i, k, v);
  return cmd.body ?? '';
});
`;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const kVarying = new Set(['date', 'x-request-id']);

async function ask(url: string, init: RequestInit): Promise<Answer> {
  const res = await fetch(url, init);
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!kVarying.has(k)) headers[k] = v;
  });
  assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  return { status: res.status, headers, body: await res.text() };
}

describe('lean invoke route: the same answers as Koa\'s route', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer('max_request_size=4096');
    const loads = [
      loadModel(t, 'mlp', writeModelDir(t.store, 'mlp', mlpModel({ sizes: [4, 8, 3] }))),
      loadModel(t, 'heads', writeModelDir(t.store, 'heads', addModel(), { 'handler.js': headHandler })),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(() => t.close());

  const json = (value: unknown) => JSON.stringify(value);
  const cases: Array<[string, string, RequestInit, number]> = [
    ['JSON invoke', '/models/mlp/invoke', { method: 'POST', body: json({ inputs: { input: [[1, 2, 3, 4]] } }), headers: { 'content-type': 'application/json' } }, 200],
    ['CSV with Accept and custom attributes', '/models/mlp/invoke', { method: 'POST', body: '1,2,3,4\n', headers: { 'content-type': 'text/csv', accept: 'text/csv', 'x-amzn-sagemaker-custom-attributes': 'trace=1' } }, 200],
    ['/invocations with the target header', '/invocations', { method: 'POST', body: json({ inputs: { input: [[1, 2, 3, 4]] } }), headers: { 'content-type': 'application/json', 'x-amzn-sagemaker-target-model': 'mlp' } }, 200],
    ['/predictions/{name}', '/predictions/mlp', { method: 'POST', body: json({ inputs: { input: [[1, 2, 3, 4]] } }), headers: { 'content-type': 'application/json' } }, 200],
    ['a bad input (400 from the worker)', '/models/mlp/invoke', { method: 'POST', body: json({ inputs: { nope: [[1]] } }), headers: { 'content-type': 'application/json' } }, 400],
    ['a body over max_request_size (413)', '/models/mlp/invoke', { method: 'POST', body: 'x'.repeat(5000), headers: { 'content-type': 'text/csv' } }, 413],
    ['a handler status, type and headers', '/models/heads/invoke', { method: 'POST', body: json({ status: 201, contentType: 'text/plain', headers: { 'x-model': 'a', 'x-amzn-sagemaker-custom-attributes': 'mine' }, body: 'hi' }), headers: { 'x-amzn-sagemaker-custom-attributes': 'theirs' } }, 201],
    ['a handler 204 with a body', '/models/heads/invoke', { method: 'POST', body: json({ status: 204, contentType: 'application/json', body: '{}' }) }, 204],
    ['a content type mime-types cannot read', '/models/heads/invoke', { method: 'POST', body: json({ contentType: 'not a type', body: 'x' }) }, 200],
    ['an empty content type', '/models/heads/invoke', { method: 'POST', body: json({ contentType: '', body: 'x' }) }, 200],
    ['a handler failure with a status', '/models/heads/invoke', { method: 'POST', body: json({ fail: 'no good', status: 422 }) }, 422],
    ['a handler failure', '/models/heads/invoke', { method: 'POST', body: json({ fail: 'broken' }) }, 500],
  ];

  for (const [what, route, init, status] of cases) {
    it(`${what}: ${route} (${status})`, async () => {
      const viaKoa = await ask(`${t.url}${route}?via=koa`, init);
      const lean = await ask(`${t.url}${route}`, init);
      assert.equal(lean.status, status, lean.body);
      assert.deepEqual(lean, viaKoa);
    });
  }

  it('logs a failure as Koa does: the request id, the route pattern, the status and code', async () => {
    const res = await fetch(`${t.url}/models/heads/invoke`, { method: 'POST', body: json({ fail: 'x', status: 409 }) });
    const id = res.headers.get('x-request-id')!;
    await waitFor(() => t.logs.some((l) => l.includes(`request ${id} POST /models/:name/invoke: 409 `)), 'the error line');
  });

  it('counts each request in the invocation metrics, lean or not', async () => {
    const count = async () => Number(/^mme_invocations_total (\d+)/m.exec(await (await fetch(`${t.managementUrl}/metrics`)).text())![1]);
    const before = await count();
    const body = json({ inputs: { input: [[1, 2, 3, 4]] } });
    await ask(`${t.url}/models/mlp/invoke`, { method: 'POST', body });
    await ask(`${t.url}/models/mlp/invoke?via=koa`, { method: 'POST', body });
    await waitFor(async () => (await count()) === before + 2, 'two more invocations counted');
  });
});
