import assert from 'node:assert/strict';
import { identityModel, mlpForward, mlpModel, multiIoModel, writeModelDir } from '../../harness/onnx-models';
import { loadModels, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { assertValuesClose } from '../helpers/assert-close';
import { f32 } from '../../harness/float32';

const kMlp = { sizes: [4, 8, 3] };

/** A binary-extension body: the JSON header, then the tensors' bytes. */
function binaryBody(header: unknown, ...tensors: Buffer[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...tensors]), headerLength: json.length };
}

async function inferBinary(t: TestServer, name: string, header: unknown, ...tensors: Buffer[]) {
  const { body, headerLength } = binaryBody(header, ...tensors);
  const res = await fetch(`${t.url}/v2/models/${name}/infer`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(headerLength) },
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const answerLength = Number(res.headers.get('inference-header-content-length') ?? bytes.length);
  return {
    status: res.status,
    headers: res.headers,
    header: JSON.parse(bytes.subarray(0, answerLength).toString()),
    binary: bytes.subarray(answerLength),
  };
}

describe('Open Inference Protocol v2 over REST (/v2)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer('max_request_size=4096');
    await loadModels(t, {
      mlp: mlpModel(kMlp),
      multi: multiIoModel(),
      bytes: identityModel('string'),
      bool: identityModel('bool'),
      half: identityModel('float16'),
    });
  });
  after(() => t.close());

  it('answers health, server metadata and model metadata with -1 for dynamic dimensions', async () => {
    assert.deepEqual((await request(`${t.url}/v2/health/live`)).body, { live: true });
    assert.deepEqual((await request(`${t.url}/v2/health/ready`)).body, { ready: true });
    const server = await request(`${t.url}/v2`);
    assert.equal(server.body.name, 'sagemaker-mme-node');
    assert.ok(server.body.extensions.includes('binary_tensor_data'));
    const expected = {
      name: 'multi',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [-1, 4] },
        { name: 'b', datatype: 'INT64', shape: [-1, 2] },
      ],
      outputs: [
        { name: 'sum', datatype: 'FP32', shape: [-1, 4] },
        { name: 'b_out', datatype: 'INT64', shape: [-1, 2] },
      ],
    };
    assert.deepEqual((await request(`${t.url}/v2/models/multi`)).body, expected);
    assert.deepEqual((await request(`${t.url}/v2/models/multi/versions/1`)).body, expected);
    assert.equal((await request(`${t.url}/v2/models/bytes`)).body.inputs[0].datatype, 'BYTES');
  });

  it('answers errors in OIP form {"error"} with the right status', async () => {
    const missing = await request(`${t.url}/v2/models/nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(Object.keys(missing.body), ['error']);
    assert.match(missing.body.error, /Model not found: nope/);
    const version = await request(`${t.url}/v2/models/mlp/versions/7/ready`);
    assert.equal(version.status, 404);
    assert.match(version.body.error, /only version is 1/);
    const bad = await request(`${t.url}/v2/models/mlp/infer`, {
      method: 'POST',
      json: { inputs: [{ name: 'input', shape: [1, 4], datatype: 'INT32', data: [1, 2, 3, 4] }] },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /datatype INT32 does not match the model's FP32/);
    const unknownOutput = await request(`${t.url}/v2/models/mlp/infer`, {
      method: 'POST',
      json: {
        inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }],
        outputs: [{ name: 'logits' }],
      },
    });
    assert.equal(unknownOutput.status, 400);
    assert.match(unknownOutput.body.error, /requested output "logits" is not one of the model's outputs: output/);
    const short = await inferBinary(
      t,
      'mlp',
      { inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 16 } }] },
      f32([1, 2, 3]),
    );
    assert.equal(short.status, 400);
    assert.match(short.header.error, /add up to 16 bytes, but 12 bytes follow/);
    // Found by the boundary property test: "abc" read as "the whole body is the header" answered 200.
    for (const declared of ['abc', '+7', '1e3', '-1']) {
      const lying = await request(`${t.url}/v2/models/mlp/infer`, {
        method: 'POST',
        json: { inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] },
        headers: { 'inference-header-content-length': declared },
      });
      assert.equal(lying.status, 400, `${declared}: ${lying.text}`);
      assert.match(
        lying.body.error,
        /inference-header-content-length is ".+"; set it to the byte length of the JSON inference header/,
      );
    }
    const large = await request(`${t.url}/v2/models/mlp/infer`, { method: 'POST', body: Buffer.alloc(5000) });
    assert.equal(large.status, 413);
    assert.match(large.body.error, /max_request_size/);
  });

  it('infers from a JSON body, echoing the request id', async () => {
    const rows = [
      [1, 2, 3, 4],
      [0, -1, 0.5, 2],
    ];
    const res = await request(`${t.url}/v2/models/mlp/infer`, {
      method: 'POST',
      json: { id: 'req-7', inputs: [{ name: 'input', shape: [2, 4], datatype: 'FP32', data: rows.flat() }] },
    });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    assert.equal(res.body.id, 'req-7');
    assert.equal(res.body.model_name, 'mlp');
    const [out] = res.body.outputs;
    assert.deepEqual([out.name, out.datatype, out.shape], ['output', 'FP32', [2, 3]]);
    assertValuesClose(out.data, mlpForward(kMlp, rows).flat());
  });

  it('speaks the binary tensor extension both ways, mixing binary and JSON tensors (binary_data_output, per-output binary_data)', async () => {
    const res = await inferBinary(
      t,
      'multi',
      {
        id: 'mixed',
        inputs: [
          { name: 'a', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 16 } },
          { name: 'b', shape: [1, 2], datatype: 'INT64', data: [7, '9007199254740993'] },
        ],
        outputs: [{ name: 'b_out', parameters: { binary_data: false } }, { name: 'sum' }],
        parameters: { binary_data_output: true },
      },
      f32([1, 2, 3, 4]),
    );
    assert.equal(res.status, 200, JSON.stringify(res.header));
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.equal(res.header.id, 'mixed');
    const [bOut, sum] = res.header.outputs;
    assert.deepEqual(bOut, { name: 'b_out', shape: [1, 2], datatype: 'INT64', data: [7, '9007199254740993'] });
    assert.deepEqual(sum, { name: 'sum', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 16 } });
    assert.deepEqual(Array.from(new Float32Array(new Uint8Array(res.binary).buffer)), [2, 4, 6, 8]);
  });

  it('carries BYTES, BOOL and FP16 in raw form', async () => {
    const strings = ['héllo', '', 'x'];
    const raw = Buffer.concat(
      strings.flatMap((s) => {
        const b = Buffer.from(s);
        const n = Buffer.alloc(4);
        n.writeUInt32LE(b.length);
        return [n, b];
      }),
    );
    const bytes = await inferBinary(
      t,
      'bytes',
      {
        inputs: [{ name: 'x', shape: [1, 3], datatype: 'BYTES', parameters: { binary_data_size: raw.length } }],
        parameters: { binary_data_output: true },
      },
      raw,
    );
    assert.equal(bytes.status, 200, JSON.stringify(bytes.header));
    assert.deepEqual(bytes.binary, raw);
    const bools = await inferBinary(
      t,
      'bool',
      { inputs: [{ name: 'x', shape: [1, 3], datatype: 'BOOL', parameters: { binary_data_size: 3 } }] },
      Buffer.from([1, 0, 1]),
    );
    assert.deepEqual(bools.header.outputs[0].data, [true, false, true]);
    const half = Buffer.from(Uint16Array.of(0x3c00, 0xc000).buffer); // 1, -2
    const halves = await inferBinary(
      t,
      'half',
      {
        inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP16', parameters: { binary_data_size: 4 } }],
        outputs: [{ name: 'y', parameters: { binary_data: true } }],
      },
      half,
    );
    assert.deepEqual(halves.binary, half);
  });

  it('reports readiness, and loads a model_store model on its first infer (self-managed cache)', async () => {
    writeModelDir(t.store, 'stored', mlpModel(kMlp));
    assert.equal((await request(`${t.url}/v2/models/mlp/ready`)).status, 200);
    const before = await request(`${t.url}/v2/models/stored/ready`);
    assert.deepEqual([before.status, before.body], [503, { name: 'stored', ready: false }]);
    const res = await request(`${t.url}/v2/models/stored/versions/1/infer`, {
      method: 'POST',
      json: { inputs: [{ name: 'input', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((await request(`${t.url}/v2/models/stored/ready`)).body, { name: 'stored', ready: true });
  });
});
