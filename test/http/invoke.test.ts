import assert from 'node:assert/strict';
import * as ort from 'onnxruntime-node';
import {
  fixedShapeModel,
  identityModel,
  IDENTITY_TYPES,
  mlpForward,
  mlpModel,
  multiIoModel,
  paddleOcrClsPath,
  writeModelDir,
} from '../../harness/onnx-models';
import { invoke, loadModel, loadModels, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { assertRowsClose, assertValuesClose } from '../helpers/assert-close';

const kMlp = { sizes: [4, 8, 3], seed: 7 };

describe('POST /models/{name}/invoke and /invocations', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer('max_request_size=4096');
    await loadModels(t, { mlp: mlpModel(kMlp), multi: multiIoModel(), fixed: fixedShapeModel() });
  });
  after(async () => {
    await t.close();
  });

  const rows = [
    [1, 2, 3, 4],
    [-1, 0.5, 0, 2],
  ];

  it('answers {"inputs": {name: nested}} with {"outputs": {name: nested}} and the right values', async () => {
    const res = await invoke(t, 'mlp', { inputs: { input: rows } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /application\/json/);
    assertRowsClose(res.body.outputs.output, mlpForward(kMlp, rows));
  });

  it('answers {"instances": [...]} with {"predictions": [...]}', async () => {
    const res = await invoke(t, 'mlp', { instances: rows });
    assert.equal(res.status, 200);
    assertRowsClose(res.body.predictions, mlpForward(kMlp, rows));
  });

  it('answers a bare nested array (SageMaker JSONSerializer) with a bare array', async () => {
    const res = await invoke(t, 'mlp', rows);
    assert.equal(res.status, 200);
    assertRowsClose(res.body, mlpForward(kMlp, rows));
  });

  it('answers an Open Inference Protocol v2 body with a v2 response', async () => {
    const res = await invoke(t, 'mlp', {
      id: 'r1',
      inputs: [{ name: 'input', shape: [2, 4], datatype: 'FP32', data: rows.flat() }],
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.model_name, 'mlp');
    assert.equal(res.body.id, 'r1');
    const [out] = res.body.outputs;
    assert.deepEqual([out.name, out.shape, out.datatype], ['output', [2, 3], 'FP32']);
    assertRowsClose([out.data.slice(0, 3), out.data.slice(3)], mlpForward(kMlp, rows));
  });

  it('feeds several named inputs of different types and returns every output by name', async () => {
    const res = await invoke(t, 'multi', { inputs: { a: [[1, 2, 3, 4]], b: [[5, -6]] } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.outputs, { sum: [[2, 4, 6, 8]], b_out: [[5, -6]] });
    const perRow = await invoke(t, 'multi', {
      inputs: {
        a: [
          [1, 1, 1, 1],
          [2, 2, 2, 2],
        ],
        b: [
          [1, 2],
          [3, 4],
        ],
      },
    });
    assert.deepEqual(perRow.body.outputs.b_out, [
      [1, 2],
      [3, 4],
    ]);
  });

  it('answers 400 naming the input and what the model expects for a wrong shape, name, type or missing input', async () => {
    const shape = await invoke(t, 'mlp', { inputs: { input: [[1, 2, 3]] } });
    assert.equal(shape.status, 400);
    assert.match(shape.body.message, /input input has shape \[1, 3\] but the model expects \[batch, 4\]/);
    const name = await invoke(t, 'mlp', { inputs: { wrong: rows } });
    assert.equal(name.status, 400);
    assert.match(name.body.message, /unknown input "wrong"; the model's inputs are: input \(float32/);
    const type = await invoke(t, 'mlp', { inputs: { input: [['a', 'b', 'c', 'd']] } });
    assert.equal(type.status, 400);
    assert.match(type.body.message, /expects numbers/);
    const missing = await invoke(t, 'multi', { inputs: { a: [[1, 2, 3, 4]] } });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /missing input b \(int64/);
    const ragged = await invoke(t, 'mlp', { inputs: { input: [[1, 2, 3, 4], [1]] } });
    assert.equal(ragged.status, 400);
    assert.match(ragged.body.message, /rectangular/);
    const fixed = await invoke(t, 'fixed', {
      inputs: {
        x: [
          [1, 2, 3],
          [4, 5, 6],
        ],
      },
    });
    assert.equal(fixed.status, 400);
    assert.match(fixed.body.message, /expects \[1, 3\]/);
    const v2type = await invoke(t, 'mlp', {
      inputs: [{ name: 'input', shape: [1, 4], datatype: 'INT32', data: [1, 2, 3, 4] }],
    });
    assert.equal(v2type.status, 400);
    assert.match(v2type.body.message, /datatype INT32 does not match the model's FP32/);
  });

  it('answers 400 for a body that is not JSON, and 415 for a content type the default handler cannot read', async () => {
    const bad = await request(`${t.url}/models/mlp/invoke`, {
      method: 'POST',
      body: '{oops',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /not valid JSON/);
    const form = await request(`${t.url}/models/mlp/invoke`, {
      method: 'POST',
      body: 'a=b',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(form.status, 415);
    assert.match(form.body.message, /application\/json/);
  });

  it('answers 404 for an unknown model', async () => {
    const res = await invoke(t, 'ghost', rows);
    assert.equal(res.status, 404);
    assert.equal(res.body.type, 'ModelNotFoundException');
    assert.equal(res.body.message, 'Model not found: ghost');
  });

  it('answers 413 for a body over max_request_size, declared or chunked', async () => {
    const big = { inputs: { input: Array.from({ length: 800 }, () => [1, 2, 3, 4]) } };
    const declared = await invoke(t, 'mlp', big);
    assert.equal(declared.status, 413);
    assert.match(declared.body.message, /max_request_size \(4096 bytes\)/);
    const text = JSON.stringify(big);
    const chunked = await request(`${t.url}/models/mlp/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(text));
          c.close();
        },
      }),
      duplex: 'half',
    });
    assert.equal(chunked.status, 413);
  });

  it('passes request headers to the handler and echoes X-Amzn-SageMaker-Custom-Attributes', async () => {
    const res = await invoke(t, 'mlp', rows, { 'X-Amzn-SageMaker-Custom-Attributes': 'trace=abc;tenant=7' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-amzn-sagemaker-custom-attributes'), 'trace=abc;tenant=7');
  });

  it('routes /invocations by X-Amzn-SageMaker-Target-Model (name or TargetModel path)', async () => {
    const byName = await request(`${t.url}/invocations`, {
      method: 'POST',
      json: rows,
      headers: { 'X-Amzn-SageMaker-Target-Model': 'mlp' },
    });
    assert.equal(byName.status, 200);
    assertRowsClose(byName.body, mlpForward(kMlp, rows));
    const byPath = await request(`${t.url}/invocations`, {
      method: 'POST',
      json: rows,
      headers: { 'X-Amzn-SageMaker-Target-Model': 'tenants/mlp.tar.gz' },
    });
    assert.equal(byPath.status, 200);
    const unknown = await request(`${t.url}/invocations`, {
      method: 'POST',
      json: rows,
      headers: { 'X-Amzn-SageMaker-Target-Model': 'ghost.tar.gz' },
    });
    assert.equal(unknown.status, 404);
    const ambiguous = await request(`${t.url}/invocations`, { method: 'POST', json: rows });
    assert.equal(ambiguous.status, 400);
    assert.match(ambiguous.body.message, /X-Amzn-SageMaker-Target-Model/);
  });

  it('lists, pages and describes loaded models as MMS does', async () => {
    const all = await request(`${t.url}/models`);
    assert.deepEqual(
      all.body.models.map((m: { modelName: string }) => m.modelName),
      ['fixed', 'mlp', 'multi'],
    );
    assert.equal(all.body.nextPageToken, undefined);
    const p1 = await request(`${t.url}/models?limit=2`);
    assert.deepEqual(
      p1.body.models.map((m: { modelName: string }) => m.modelName),
      ['fixed', 'mlp'],
    );
    assert.equal(p1.body.nextPageToken, '2');
    const p2 = await request(`${t.url}/models?limit=2&next_page_token=${p1.body.nextPageToken}`);
    assert.deepEqual(
      p2.body.models.map((m: { modelName: string }) => m.modelName),
      ['multi'],
    );
    assert.equal(p2.body.nextPageToken, undefined);
    const beyond = await request(`${t.url}/models?next_page_token=99`);
    assert.deepEqual(beyond.body, { models: [] });
    const d = await request(`${t.url}/models/mlp`);
    assert.equal(d.status, 200);
    assert.equal(d.body.modelName, 'mlp');
    assert.match(d.body.modelUrl, /mlp$/);
    assert.equal(d.body.workers[0].status, 'READY');
    assert.ok(d.body.workers[0].pid > 0);
    assert.ok(d.body.memoryUsage > 0);
    assert.equal((await request(`${t.url}/models/ghost`)).status, 404);
  });

  it('answers /ping 200 and unknown routes with MMS error bodies', async () => {
    const ping = await request(`${t.url}/ping`);
    assert.equal(ping.status, 200);
    assert.deepEqual(ping.body, { status: 'Healthy' });
    const nope = await request(`${t.url}/nope`);
    assert.equal(nope.status, 404);
    assert.equal(nope.body.type, 'ResourceNotFoundException');
    const method = await request(`${t.url}/ping`, { method: 'DELETE' });
    assert.equal(method.status, 405);
  });
});

describe('tensor types over JSON', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
    const loads = IDENTITY_TYPES.map((type) =>
      loadModel(t, `id-${type}`, writeModelDir(t.store, `id-${type}`, identityModel(type))),
    );
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  const samples: Record<string, unknown[][]> = {
    float32: [[1.5, -2]],
    float64: [[1e-300, 2.5]],
    float16: [[0.5, -2]],
    int8: [[-128, 127]],
    int16: [[-300, 300]],
    int32: [[-70000, 70000]],
    int64: [[-5, 9007199254740991]],
    uint8: [[0, 255]],
    uint16: [[0, 65535]],
    uint32: [[0, 4294967295]],
    uint64: [[0, 12]],
    bool: [[true, false]],
    string: [['a', 'héllo']],
  };

  for (const type of IDENTITY_TYPES) {
    it(`round-trips ${type}`, async () => {
      const value = samples[type];
      const res = await invoke(t, `id-${type}`, { inputs: { x: value } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.outputs.y, value);
    });
  }

  it('keeps int64 values beyond 2^53 exact, as decimal strings', async () => {
    const res = await invoke(t, 'id-int64', { inputs: { x: [['9007199254740993', 1]] } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.outputs.y, [['9007199254740993', 1]]);
  });
});

describe('a real model nobody here wrote: PaddleOCR text-direction classifier', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => {
    await t.close();
  });

  it('gives the same output over HTTP as a direct onnxruntime-node run', async () => {
    const dir = writeModelDir(t.store, 'cls', new Uint8Array(require('node:fs').readFileSync(paddleOcrClsPath())));
    assert.equal((await loadModel(t, 'cls', dir)).status, 200);
    const data = Float32Array.from({ length: 3 * 48 * 192 }, (_, i) => Math.sin(i / 97));
    const session = await ort.InferenceSession.create(paddleOcrClsPath());
    const direct = await session.run({ x: new ort.Tensor('float32', data, [1, 3, 48, 192]) });
    const expected = Array.from(direct[session.outputNames[0]].data as Float32Array);
    const res = await invoke(t, 'cls', {
      inputs: [{ name: 'x', shape: [1, 3, 48, 192], datatype: 'FP32', data: Array.from(data) }],
    });
    assert.equal(res.status, 200, res.text);
    const [out] = res.body.outputs;
    assert.deepEqual(out.shape, [1, 2]);
    assertValuesClose(out.data, expected, 'cls', 1e-5);
    await session.release();
  });
});
