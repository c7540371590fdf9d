/**
 * Custom handlers (MMS's custom service contract in JavaScript): where the module comes from, what
 * its context offers, how its errors reach the client, and that it receives whole batches.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { mlpForward, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { assertValuesClose } from '../helpers/assert-close';

const kMlp = { sizes: [4, 8, 3], seed: 3 };
const kRows = [
  [1, 2, 3, 4],
  [-1, 0.5, 0, 2],
];
// Compiled to dist/test/http/, so the repo root is three levels up.
const OCR_DIR = path.resolve(__dirname, '../../../model-store/ocr-direction');

/** Only a postprocess: the default handler decodes, runs and batches; labels come from initialize. */
const labelsHandler = `const fs = require('node:fs');
const path = require('node:path');
let labels;
exports.initialize = (ctx) => { labels = JSON.parse(fs.readFileSync(path.join(ctx.modelDir, 'labels.json'), 'utf8')); };
exports.postprocess = async (outputs) => outputs.map((out) => {
  if (out instanceof Error) return out;
  const [rows, n] = out.output.dims;
  return Array.from({ length: rows }, (_, r) => {
    const row = Array.from(out.output.data.slice(r * n, (r + 1) * n));
    return labels[row.indexOf(Math.max(...row))];
  });
});
`;

/** Answers its own name: tells which module the server chose. */
const named = (name: string) =>
  `exports.handle = async (requests) => requests.map(() => ({ handler: ${JSON.stringify(name)} }));\n`;

/** Reports what the context and the request look like, and sets the response's status and headers. */
const contextProbe = `exports.handle = async (requests, ctx) => Promise.all(requests.map(async (req, i) => {
  const { output } = await ctx.run({ input: { type: 'float32', dims: [1, 4], data: Float32Array.of(1, 2, 3, 4) } });
  ctx.setResponseStatus(i, 201);
  ctx.setResponseHeader(i, 'X-Handler', 'probe');
  ctx.setResponseContentType(i, 'application/vnd.probe+json');
  return {
    modelName: ctx.modelName, modelDir: ctx.modelDir, gpuId: ctx.gpuId, batchSize: ctx.batchSize,
    systemProperties: ctx.systemProperties, inputs: ctx.inputs, outputs: ctx.outputs,
    sessionInputs: ctx.session.inputNames, header: ctx.getRequestHeader(i, 'X-Custom'),
    allHeaders: Object.keys(ctx.getAllRequestHeaders(i)).includes('x-custom'),
    data: req.data === undefined ? 'undefined' : req.data, contentType: req.contentType, accept: req.accept,
    output: Array.from(output.data), batch: requests.length,
  };
}));
`;

/** Fails as each request's body says: an Error in a slot, a thrown error, or a miscounted result. */
const faulty = `exports.handle = async (requests) => {
  const cmds = requests.map((r) => r.body.toString());
  if (cmds.includes('throw')) throw new Error('the whole batch broke');
  if (cmds.includes('miscount')) return [];
  return cmds.map((cmd) => {
    if (cmd === 'status') return Object.assign(new Error('no such customer'), { status: 422 });
    if (cmd === 'memory') return new RangeError('Array buffer allocation failed');
    if (cmd === 'plain') return new Error('boom');
    return { ok: cmd };
  });
};
`;

function rotated(image: number[][][]): number[][][] {
  return image
    .slice()
    .reverse()
    .map((row) => row.slice().reverse());
}

describe('custom handlers', () => {
  let t: TestServer;
  before(async () => {
    // The example model is loaded from the repository's model-store, a root besides the test store.
    const store = tempDir('mme-store-');
    t = await startTestServer(`model_roots=${path.dirname(OCR_DIR)},${store}`, { store });
    const model = mlpModel(kMlp);
    const loads = [
      loadModel(
        t,
        'labels',
        writeModelDir(t.store, 'labels', model, {
          'handler.js': labelsHandler,
          'labels.json': '["cat", "dog", "bird"]',
        }),
      ),
      loadModel(
        t,
        'config-named',
        writeModelDir(t.store, 'config-named', model, {
          'code/custom.js': named('custom.js'),
          'model-config.json': '{"handler": "code/custom.js"}',
        }),
      ),
      loadModel(
        t,
        'request-named',
        writeModelDir(t.store, 'request-named', model, {
          'handler.js': named('handler.js'),
          'alt.js': named('alt.js'),
        }),
        { handler: 'alt.js' },
      ),
      loadModel(t, 'probe', writeModelDir(t.store, 'probe', model, { 'handler.js': contextProbe }), {
        batch_size: 4,
        max_batch_delay: 300,
      }),
      loadModel(t, 'faulty', writeModelDir(t.store, 'faulty', model, { 'handler.js': faulty }), {
        batch_size: 3,
        max_batch_delay: 300,
      }),
      loadModel(t, 'ocr-direction', OCR_DIR, { batch_size: 2, max_batch_delay: 500 }),
      // Batches that close only when full, so that a slow machine cannot split them: no clock race.
      loadModel(t, 'probe-4', writeModelDir(t.store, 'probe-4', model, { 'handler.js': contextProbe }), {
        batch_size: 4,
        max_batch_delay: 600_000,
      }),
      loadModel(t, 'ocr-pair', OCR_DIR, { batch_size: 2, max_batch_delay: 600_000 }),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  describe('loading', () => {
    it('uses handler.js from the model directory, the default handler filling in what it leaves out', async () => {
      const res = await invoke(t, 'labels', { inputs: { input: kRows } });
      assert.equal(res.status, 200, res.text);
      const expected = mlpForward(kMlp, kRows).map((row) => ['cat', 'dog', 'bird'][row.indexOf(Math.max(...row))]);
      assert.deepEqual(res.body, expected);
    });

    it('uses the module model-config.json names', async () => {
      assert.deepEqual((await invoke(t, 'config-named', {})).body, { handler: 'custom.js' });
    });

    it('uses the module the load request names, over handler.js', async () => {
      assert.deepEqual((await invoke(t, 'request-named', {})).body, { handler: 'alt.js' });
    });

    it('refuses to load a handler that does not import or whose initialize fails (400, with the cause)', async () => {
      const syntax = await loadModel(
        t,
        'broken',
        writeModelDir(t.store, 'broken', mlpModel(kMlp), { 'handler.js': 'exports.handle = (;\n' }),
      );
      assert.equal(syntax.status, 400);
      assert.equal(syntax.body.errorCode, 'MME_ERR_INVALID_MODEL');
      assert.match(syntax.body.message, /handler handler\.js failed to load: Unexpected token/);
      const init = await loadModel(
        t,
        'init-fails',
        writeModelDir(t.store, 'init-fails', mlpModel(kMlp), {
          'handler.js': "exports.initialize = () => { throw new Error('no vocabulary file'); };\n",
        }),
      );
      assert.equal(init.status, 400);
      assert.match(init.body.message, /no vocabulary file/);
    });
  });

  describe('context', () => {
    it('gives the model, its session and metadata, request headers and the decoded body, and keeps the response status and headers it sets', async () => {
      const res = await invoke(t, 'probe', { hello: 'world' }, { 'x-custom': 'abc', accept: 'application/json' });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers.get('x-handler'), 'probe');
      assert.equal(res.headers.get('content-type'), 'application/vnd.probe+json');
      const b = res.body;
      assert.equal(b.modelName, 'probe');
      assert.equal(b.modelDir, path.join(t.store, 'probe'));
      assert.deepEqual([b.gpuId, b.batchSize], [-1, 4]);
      assert.deepEqual(b.systemProperties, {
        model_dir: b.modelDir,
        gpu_id: -1,
        batch_size: 4,
        server_name: 'sagemaker-mme-node',
        server_version: '0.1.0',
      });
      assert.deepEqual(b.inputs, [{ name: 'input', type: 'float32', shape: ['batch', 4] }]);
      assert.deepEqual(b.outputs, [{ name: 'output', type: 'float32', shape: ['batch', 3] }]);
      assert.deepEqual(b.sessionInputs, ['input']);
      assert.deepEqual([b.header, b.allHeaders], ['abc', true]);
      assert.deepEqual([b.data, b.contentType, b.accept], [{ hello: 'world' }, 'application/json', 'application/json']);
      assertValuesClose(b.output, mlpForward(kMlp, [[1, 2, 3, 4]])[0]);
    });

    it('decodes text bodies to strings and leaves other types as bytes (decode_input_request)', async () => {
      const text = await request(`${t.url}/models/probe/invoke`, {
        method: 'POST',
        body: 'a,b',
        headers: { 'content-type': 'text/csv' },
      });
      assert.equal(text.body.data, 'a,b');
      const bytes = await request(`${t.url}/models/probe/invoke`, {
        method: 'POST',
        body: 'xyz',
        headers: { 'content-type': 'application/octet-stream' },
      });
      assert.equal(bytes.body.data, 'undefined');
    });
  });

  describe('errors', () => {
    it('keeps a status the handler raises', async () => {
      const res = await request(`${t.url}/models/faulty/invoke`, { method: 'POST', body: 'status' });
      assert.equal(res.status, 422);
      assert.equal(res.body.message, 'no such customer');
      // A 4xx is the client's mistake: not PredictionException, which the error table lists under 500.
      assert.equal(res.body.errorCode, 'MME_ERR_INVALID_INPUT');
      assert.equal(res.body.type, 'BadRequestException');
    });

    it('answers 507 for a memory error', async () => {
      const res = await request(`${t.url}/models/faulty/invoke`, { method: 'POST', body: 'memory' });
      assert.equal(res.status, 507);
      assert.equal(res.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
    });

    it('answers 500 with the message and no stack for any other error, thrown or in a slot', async () => {
      for (const cmd of ['plain', 'throw']) {
        const res = await request(`${t.url}/models/faulty/invoke`, { method: 'POST', body: cmd });
        assert.equal(res.status, 500);
        assert.equal(res.body.errorCode, 'MME_ERR_MODEL_ERROR');
        assert.match(res.body.message, /^the model's handler failed: (boom|the whole batch broke)$/);
        assert.doesNotMatch(res.text, /\n\s+at /);
      }
    });

    it('answers 500 when the handler returns the wrong number of results', async () => {
      const res = await request(`${t.url}/models/faulty/invoke`, { method: 'POST', body: 'miscount' });
      assert.equal(res.status, 500);
      assert.match(res.body.message, /returned 0 results for a batch of 1; it must return one result per request/);
    });
  });

  describe('batching', () => {
    it('hands the handler the whole batch, and each caller its own result', async () => {
      const model = t.server.manager.registry.get('probe-4');
      const before = model.stats.batches;
      const results = await Promise.all([0, 1, 2, 3].map((i) => invoke(t, 'probe-4', { caller: i })));
      results.forEach((res, i) => {
        assert.equal(res.status, 201, res.text);
        assert.deepEqual([res.body.data, res.body.batch], [{ caller: i }, 4]);
      });
      assert.equal(model.stats.batches - before, 1);
    });

    it('fails only the request whose slot holds an error', async () => {
      const results = await Promise.all(
        ['a', 'status', 'b'].map((body) => request(`${t.url}/models/faulty/invoke`, { method: 'POST', body })),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 422, 200],
      );
      assert.deepEqual([results[0].body, results[2].body], [{ ok: 'a' }, { ok: 'b' }]);
    });

    it('classifies upright and upside-down text in one batch (example model ocr-direction)', async () => {
      const { image } = JSON.parse(readFileSync(path.join(OCR_DIR, 'example-request.json'), 'utf8')) as {
        image: number[][][];
      };
      const model = t.server.manager.registry.get('ocr-pair');
      const before = model.stats.batches;
      const [upright, upsideDown] = await Promise.all([
        invoke(t, 'ocr-pair', { image }),
        invoke(t, 'ocr-pair', { image: rotated(image) }),
      ]);
      assert.equal(model.stats.batches - before, 1);
      assert.equal(upright.body.label, '0');
      assert.equal(upsideDown.body.label, '180');
      for (const res of [upright, upsideDown]) assert.ok(res.body.score > 0.9 && res.body.score <= 1, res.text);
      const bad = await invoke(t, 'ocr-direction', { image: [[1, 2, 3]] });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /"image" must be an H x W x 3 array/);
    });
  });
});

describe('default_service_handler and decode_input_request=false', () => {
  let t: TestServer;
  before(async () => {
    const shared = path.join(tempDir('mme-handler-'), 'shared.js');
    writeFileSync(shared, contextProbe);
    t = await startTestServer(`default_service_handler=${shared}\ndecode_input_request=false`);
    const model = mlpModel(kMlp);
    const loads = [
      loadModel(t, 'plain', writeModelDir(t.store, 'plain', model)),
      loadModel(t, 'own', writeModelDir(t.store, 'own', model, { 'handler.js': named('handler.js') })),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  it('serves a model without a handler of its own with the configured one, without decoding its body', async () => {
    const res = await invoke(t, 'plain', { hello: 'world' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual([res.body.modelName, res.body.data], ['plain', 'undefined']);
  });

  it("leaves a model directory's own handler.js in charge", async () => {
    assert.deepEqual((await invoke(t, 'own', {})).body, { handler: 'handler.js' });
  });
});
