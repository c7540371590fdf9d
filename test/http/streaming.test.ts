import assert from 'node:assert/strict';
import path from 'node:path';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { invoke, loadModel } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { streamInvoke } from '../../harness/stream-client';

// Compiled to dist/test/http/, so the repo root is three levels up.
const GENERATOR_DIR = path.resolve(__dirname, '../../../model-store/text-generator');

/** Streams "batch=<requests in its batch>" after a pause, then answers "done". */
const batchProbe = `exports.streaming = true;
exports.handle = async (requests, ctx) => {
  await new Promise((r) => setTimeout(r, 50));
  requests.forEach((_, i) => ctx.sendIntermediate(i, 'batch=' + requests.length + ';'));
  return requests.map(() => 'done');
};
`;

/** Streams one chunk, then fails (or fails at once when the body says "early"). */
const failsMidStream = `exports.streaming = true;
exports.handle = async (requests, ctx) => {
  if (requests[0].body.toString() === 'early') throw Object.assign(new Error('refused before streaming'), { status: 422 });
  ctx.setResponseStatus(0, 201);
  ctx.setResponseHeader(0, 'x-stream', 'yes');
  ctx.sendIntermediate(0, 'partial');
  await new Promise((r) => setTimeout(r, 50));
  ctx.setResponseStatus(0, 500); // too late: the head went out with the first chunk
  throw new Error('broke after the first chunk');
};
`;

/** Calls sendIntermediate without declaring streaming. */
const undeclared = `exports.handle = async (requests, ctx) => { ctx.sendIntermediate(0, 'x'); return ['never']; };\n`;

function lines(chunks: Buffer[]): unknown[] {
  return Buffer.concat(chunks)
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('streamed responses (a handler exporting streaming = true)', () => {
  let t: TestServer;
  before(async () => {
    // The example model is loaded from the repository's model-store, a root besides the test store.
    const store = tempDir('mme-store-');
    t = await startTestServer(`model_roots=${path.dirname(GENERATOR_DIR)},${store}`, { store });
    const model = mlpModel({ sizes: [2, 2] });
    const loads = [
      loadModel(t, 'text-generator', GENERATOR_DIR),
      loadModel(t, 'probe', writeModelDir(t.store, 'probe', model, { 'handler.js': batchProbe }), {
        batch_size: 4,
        max_batch_delay: 300,
      }),
      loadModel(t, 'fails', writeModelDir(t.store, 'fails', model, { 'handler.js': failsMidStream })),
      loadModel(t, 'undeclared', writeModelDir(t.store, 'undeclared', model, { 'handler.js': undeclared })),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  it('sends each generated token as a chunk when it is made, then the final response (example model text-generator)', async () => {
    const body = JSON.stringify({ prompt: 'hello', max_tokens: 5, delay_ms: 100 });
    const res = await streamInvoke(`${t.url}/models/text-generator/invoke`, body, {
      headers: { 'x-amzn-sagemaker-custom-attributes': 'trace=1' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers['transfer-encoding'], 'chunked');
    assert.equal(res.headers['content-length'], undefined);
    assert.match(res.headers['content-type']!, /^application\/jsonlines/);
    assert.equal(res.headers['x-amzn-sagemaker-custom-attributes'], 'trace=1');
    assert.ok(res.headers['x-request-id']);
    assert.ok(res.complete);
    const got = lines(res.chunks) as Array<{ token?: string; text?: string; tokens?: number }>;
    assert.equal(got.length, 6);
    const tokens = got
      .slice(0, 5)
      .map((l) => l.token)
      .join('');
    assert.deepEqual(got[5], { text: tokens, tokens: 5 });
    // The tokens arrive one by one, not all at the end.
    assert.ok(res.chunks.length >= 5, `${res.chunks.length} separate chunks`);
  });

  it('stops the handler when the client disconnects mid-stream (Cancel → context.isCancelled / sendIntermediate false)', async () => {
    const body = JSON.stringify({ prompt: 'stop me', max_tokens: 1000, delay_ms: 20 });
    const res = await streamInvoke(`${t.url}/models/text-generator/invoke`, body, { stopAfter: 3 });
    assert.equal(res.complete, false);
    const stopped = /client disconnected: stopped after (\d+) of 1000 tokens/;
    await waitFor(() => t.logs.some((l) => stopped.test(l)), 'the handler to log that it stopped', 5_000);
    const produced = Number(stopped.exec(t.logs.find((l) => stopped.test(l))!)![1]);
    // It stopped early, wherever the disconnect found it: how many tokens fit in between depends on the machine's load.
    assert.ok(produced >= 3 && produced < 1000, `stopped after ${produced} tokens`);
    const next = await invoke(t, 'text-generator', { prompt: 'again', max_tokens: 2 });
    assert.equal(next.status, 200);
  });

  it('runs streaming requests one per batch, whatever batch_size says', async () => {
    const results = await Promise.all([1, 2, 3].map(() => streamInvoke(`${t.url}/models/probe/invoke`, '{}')));
    for (const r of results) assert.equal(Buffer.concat(r.chunks).toString(), 'batch=1;done');
  });

  it('sends the status and headers set before the first chunk, and cuts the body short when the handler fails after it', async () => {
    const res = await streamInvoke(`${t.url}/models/fails/invoke`, 'late');
    assert.equal(res.status, 201);
    assert.equal(res.headers['x-stream'], 'yes');
    assert.equal(Buffer.concat(res.chunks).toString(), 'partial');
    assert.equal(res.complete, false, 'an unfinished chunked body is the failure signal');
  });

  it('answers a failure before the first chunk as an ordinary error response', async () => {
    const res = await streamInvoke(`${t.url}/models/fails/invoke`, 'early');
    assert.equal(res.status, 422);
    assert.ok(res.complete);
    assert.match(Buffer.concat(res.chunks).toString(), /refused before streaming/);
  });

  it('fails a request whose handler streams without declaring streaming = true, saying how to fix it', async () => {
    const res = await invoke(t, 'undeclared', {});
    assert.equal(res.status, 500);
    assert.match(res.body.message, /export `streaming = true` from the handler module/);
  });

  it('leaves responses of handlers that send no chunk unstreamed, with a Content-Length', async () => {
    const res = await streamInvoke(`${t.url}/models/text-generator/invoke`, JSON.stringify({ max_tokens: 0 }));
    assert.equal(res.status, 400);
    assert.equal(res.headers['transfer-encoding'], undefined);
    assert.ok(Number(res.headers['content-length']) > 0);
  });
});
