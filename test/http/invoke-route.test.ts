/**
 * The invoke routes (src/http/invoke-route.ts) answer as the HTTP contract says: status, headers,
 * body, the error log line and the invocation metric, for every route, refusals included. The
 * answers below are the ones Koa's route gave while both routes existed (a differential test kept
 * them equal); each case now pins the one route.
 */
import assert from 'node:assert/strict';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { rawExchange } from '../../harness/raw-http';
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

/** Headers that differ by nature from one answer to the next, or belong to the connection. */
const kVarying = new Set(['date', 'x-request-id', 'connection', 'keep-alive']);

async function ask(url: string, init: RequestInit): Promise<Answer> {
  const res = await fetch(url, init);
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!kVarying.has(k)) headers[k] = v;
  });
  assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  return { status: res.status, headers, body: await res.text() };
}

const json = (value: unknown) => JSON.stringify(value);
const kJsonType = 'application/json; charset=utf-8';
const kRows = json({ inputs: { input: [[1, 2, 3, 4]] } });
/** The fixture MLP's answer to kRows (its weights are fixed). */
const kOutput = '{"outputs":{"output":[[0.1596522331237793,-0.11639877408742905,-0.047946348786354065]]}}';
/** MMS's error body, as the server writes it. */
const mmsError = (code: number, type: string, message: string, errorCode: string) =>
  JSON.stringify({ code, type, message, errorCode }, null, 2);

describe('invoke routes: node:http through the gateway', () => {
  let t: TestServer;
  let port: number;
  before(async () => {
    t = await startTestServer('max_request_size=4096');
    port = Number(new URL(t.url).port);
    const loads = [
      loadModel(t, 'mlp', writeModelDir(t.store, 'mlp', mlpModel({ sizes: [4, 8, 3] }))),
      loadModel(t, 'heads', writeModelDir(t.store, 'heads', addModel(), { 'handler.js': headHandler })),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(() => t.close());

  const cases: Array<[string, string, RequestInit, Answer]> = [
    [
      'JSON invoke',
      '/models/mlp/invoke',
      { method: 'POST', body: kRows, headers: { 'content-type': 'application/json' } },
      { status: 200, headers: { 'content-length': '88', 'content-type': kJsonType }, body: kOutput },
    ],
    [
      'CSV with Accept and custom attributes',
      '/models/mlp/invoke',
      {
        method: 'POST',
        body: '1,2,3,4\n',
        headers: { 'content-type': 'text/csv', accept: 'text/csv', 'x-amzn-sagemaker-custom-attributes': 'trace=1' },
      },
      {
        status: 200,
        headers: {
          'content-length': '62',
          'content-type': 'text/csv; charset=utf-8',
          'x-amzn-sagemaker-custom-attributes': 'trace=1',
        },
        body: '0.1596522331237793,-0.11639877408742905,-0.047946348786354065\n',
      },
    ],
    [
      '/invocations with the target header',
      '/invocations',
      {
        method: 'POST',
        body: kRows,
        headers: { 'content-type': 'application/json', 'x-amzn-sagemaker-target-model': 'mlp' },
      },
      { status: 200, headers: { 'content-length': '88', 'content-type': kJsonType }, body: kOutput },
    ],
    [
      '/invocations with the target as SageMaker sends it',
      '/invocations',
      {
        method: 'POST',
        body: kRows,
        headers: { 'content-type': 'application/json', 'x-amzn-sagemaker-target-model': 'some/prefix/mlp.tar.gz' },
      },
      { status: 200, headers: { 'content-length': '88', 'content-type': kJsonType }, body: kOutput },
    ],
    [
      '/invocations?model_name=',
      '/invocations?model_name=%6dlp',
      { method: 'POST', body: kRows, headers: { 'content-type': 'application/json' } },
      { status: 200, headers: { 'content-length': '88', 'content-type': kJsonType }, body: kOutput },
    ],
    [
      '/predictions/{name}',
      '/predictions/mlp',
      { method: 'POST', body: kRows, headers: { 'content-type': 'application/json' } },
      { status: 200, headers: { 'content-length': '88', 'content-type': kJsonType }, body: kOutput },
    ],
    [
      'a route as the router matched it: any case, a trailing slash, a percent-encoded name, a query',
      '/MODELS/%6dlp/Invoke/?x=1',
      { method: 'POST', body: kRows, headers: { 'content-type': 'application/json' } },
      { status: 200, headers: { 'content-length': '88', 'content-type': kJsonType }, body: kOutput },
    ],
    [
      'a bad input (400 from the worker)',
      '/models/mlp/invoke',
      { method: 'POST', body: json({ inputs: { nope: [[1]] } }), headers: { 'content-type': 'application/json' } },
      {
        status: 400,
        headers: { 'content-length': '181', 'content-type': kJsonType },
        body: mmsError(
          400,
          'BadRequestException',
          'unknown input "nope"; the model\'s inputs are: input (float32 [batch, 4])',
          'MME_ERR_INVALID_INPUT',
        ),
      },
    ],
    [
      'a body over max_request_size (413)',
      '/models/mlp/invoke',
      { method: 'POST', body: 'x'.repeat(5000), headers: { 'content-type': 'text/csv' } },
      {
        status: 413,
        headers: { 'content-length': '278', 'content-type': kJsonType },
        body: mmsError(
          413,
          'RequestEntityTooLargeException',
          'The request body is larger than max_request_size (4096 bytes). Send a smaller payload or raise max_request_size (on SageMaker: SAGEMAKER_MAX_PAYLOAD_IN_MB).',
          'MME_ERR_PAYLOAD_TOO_LARGE',
        ),
      },
    ],
    [
      'a model the server does not know (404)',
      '/predictions/nope',
      { method: 'POST', body: kRows },
      {
        status: 404,
        headers: { 'content-length': '133', 'content-type': kJsonType },
        body: mmsError(404, 'ModelNotFoundException', 'Model not found: nope', 'MME_ERR_MODEL_NOT_FOUND'),
      },
    ],
    [
      '/invocations naming no model while several are loaded (400)',
      '/invocations',
      { method: 'POST', body: kRows },
      {
        status: 400,
        headers: { 'content-length': '218', 'content-type': kJsonType },
        body: mmsError(
          400,
          'BadRequestException',
          '2 models are loaded; name the target with the X-Amzn-SageMaker-Target-Model header or POST /models/{name}/invoke.',
          'MME_ERR_BAD_REQUEST',
        ),
      },
    ],
    [
      "a model under /v2, OIP's error body",
      '/v2/models/nope/infer',
      { method: 'POST', body: '{}' },
      {
        status: 404,
        headers: { 'content-length': '38', 'content-type': kJsonType },
        body: '{\n  "error": "Model not found: nope"\n}',
      },
    ],
    [
      'another method (405)',
      '/models/mlp/invoke',
      { method: 'GET' },
      {
        status: 405,
        headers: { 'content-length': '172', 'content-type': kJsonType },
        body: mmsError(
          405,
          'MethodNotAllowedException',
          'Method not allowed for this resource; see docs/api.md.',
          'MME_ERR_METHOD_NOT_ALLOWED',
        ),
      },
    ],
    [
      'OPTIONS',
      '/invocations',
      { method: 'OPTIONS' },
      {
        status: 200,
        headers: { allow: 'POST', 'content-length': '0', 'content-type': 'text/plain; charset=utf-8' },
        body: '',
      },
    ],
    [
      'a handler status, type and headers',
      '/models/heads/invoke',
      {
        method: 'POST',
        body: json({
          status: 201,
          contentType: 'text/plain',
          headers: { 'x-model': 'a', 'x-amzn-sagemaker-custom-attributes': 'mine' },
          body: 'hi',
        }),
        headers: { 'x-amzn-sagemaker-custom-attributes': 'theirs' },
      },
      {
        status: 201,
        headers: {
          'content-length': '2',
          'content-type': 'text/plain; charset=utf-8',
          'x-amzn-sagemaker-custom-attributes': 'mine',
          'x-model': 'a',
        },
        body: 'hi',
      },
    ],
    [
      'a handler 204 with a body',
      '/models/heads/invoke',
      { method: 'POST', body: json({ status: 204, contentType: 'application/json', body: '{}' }) },
      { status: 204, headers: {}, body: '' },
    ],
    [
      'a content type that is no media type',
      '/models/heads/invoke',
      { method: 'POST', body: json({ contentType: 'not a type', body: 'x' }) },
      { status: 200, headers: { 'content-length': '1', 'content-type': 'application/octet-stream' }, body: 'x' },
    ],
    [
      'an empty content type',
      '/models/heads/invoke',
      { method: 'POST', body: json({ contentType: '', body: 'x' }) },
      { status: 200, headers: { 'content-length': '1', 'content-type': 'application/octet-stream' }, body: 'x' },
    ],
    [
      'a binary OIP type, left as it is',
      '/models/heads/invoke',
      {
        method: 'POST',
        body: json({ contentType: 'application/vnd.sagemaker-triton.binary+json;json-header-size=2', body: '{}' }),
      },
      {
        status: 200,
        headers: {
          'content-length': '2',
          'content-type': 'application/vnd.sagemaker-triton.binary+json;json-header-size=2',
        },
        body: '{}',
      },
    ],
    [
      'a handler failure with a status',
      '/models/heads/invoke',
      { method: 'POST', body: json({ fail: 'no good', status: 422 }) },
      {
        status: 422,
        headers: { 'content-length': '114', 'content-type': kJsonType },
        body: mmsError(422, 'BadRequestException', 'no good', 'MME_ERR_INVALID_INPUT'),
      },
    ],
    [
      'a handler failure',
      '/models/heads/invoke',
      { method: 'POST', body: json({ fail: 'broken' }) },
      {
        status: 500,
        headers: { 'content-length': '139', 'content-type': kJsonType },
        body: mmsError(500, 'PredictionException', "the model's handler failed: broken", 'MME_ERR_MODEL_ERROR'),
      },
    ],
  ];

  for (const [what, route, init, expected] of cases) {
    it(`${what}: ${init.method} ${route} (${expected.status})`, async () => {
      assert.deepEqual(await ask(`${t.url}${route}`, init), expected);
    });
  }

  it('logs a failure with the request id and the route pattern; a refusal before the route names none', async () => {
    const res = await fetch(`${t.url}/models/heads/invoke`, { method: 'POST', body: json({ fail: 'x', status: 409 }) });
    const id = res.headers.get('x-request-id')!;
    await waitFor(
      () => t.logs.some((l) => l === `request ${id} POST /models/:name/invoke: 409 MME_ERR_INVALID_INPUT`),
      'the error line',
    );
    const refused = await fetch(`${t.url}/invocations`, { method: 'PUT' });
    const refusedId = refused.headers.get('x-request-id')!;
    await waitFor(
      () => t.logs.some((l) => l === `request ${refusedId} PUT -: 405 MME_ERR_METHOD_NOT_ALLOWED`),
      "the refusal's line",
    );
  });

  it('refuses a foreign Host on a loopback listener (403) and too many headers (431, then closes)', async () => {
    const body = kRows;
    const foreign = await rawExchange(
      port,
      `POST /models/mlp/invoke HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      { responses: 1 },
    );
    assert.equal(foreign.responses[0].status, 403);
    assert.equal(JSON.parse(foreign.responses[0].body.toString()).errorCode, 'MME_ERR_FORBIDDEN');
    const ipv6 = await rawExchange(
      port,
      `POST /models/mlp/invoke HTTP/1.1\r\nHost: [::1]:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      { responses: 1 },
    );
    assert.equal(ipv6.responses[0].status, 200);
    const headers = Array.from({ length: 100 }, (_, i) => `x-h${i}: v\r\n`).join('');
    const crowded = await rawExchange(
      port,
      `POST /models/mlp/invoke HTTP/1.1\r\nHost: localhost\r\n${headers}Content-Length: ${body.length}\r\n\r\n${body}`,
    );
    assert.equal(crowded.responses[0].status, 431);
    assert.ok(crowded.closed, 'the connection ends after the answer');
  });

  it('counts what reached a route in the invocation metric, and no refusal before it', async () => {
    const count = async () => {
      const text = await (await fetch(`${t.managementUrl}/metrics`)).text();
      return [/^mme_invocations_total (\d+)/m, /^mme_invocation_4xx_errors_total (\d+)/m].map((re) =>
        Number(re.exec(text)?.[1] ?? 0),
      );
    };
    const [before, before4xx] = await count();
    await ask(`${t.url}/models/mlp/invoke`, {
      method: 'POST',
      body: kRows,
      headers: { 'content-type': 'application/json' },
    });
    await ask(`${t.url}/v2/models/nope/infer`, { method: 'POST', body: '{}' });
    await ask(`${t.url}/v2/models/mlp/versions/2/infer`, { method: 'POST', body: '{}' });
    await ask(`${t.url}/predictions/mlp`, { method: 'GET' });
    await waitFor(
      async () => (await count()).join() === [before + 2, before4xx + 1].join(),
      'an answer and a 404 counted; a wrong version and a 405 not',
    );
  });
});
