/**
 * gRPC ModelInfer as bytes (issue 45, item 4): the door hands the worker the request's protobuf and
 * the client the worker's answer as it wrote it (worker-process/model-infer-codec.ts). Concurrent
 * callers sharing batches each get their own tensors back, typed or raw; a custom handler that
 * answers another type is the model's error; over HTTP the same type meets the same codec.
 */
import assert from 'node:assert/strict';
import { status as Status, type MethodDefinition } from '@grpc/grpc-js';
import fc from 'fast-check';
import { serviceDefinitions } from '../../src/grpc/protos';
import { MODEL_INFER_MEDIA_TYPE } from '../../src/protocol/messages';
import { f32 } from '../../harness/float32';
import { failure, grpcClients, unary, type GrpcClients } from '../../harness/grpc-clients';
import { loadModel } from '../../harness/http-requests';
import { identityModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, type TestServer } from '../../harness/test-server';

const method = (serviceDefinitions().kserve.service as unknown as Record<string, MethodDefinition<unknown, unknown>>)
  .ModelInfer;
const kJsonHandler = `exports.handle = async (requests, ctx) => requests.map((_, i) => { ctx.setResponseContentType(i, 'application/json'); return '{}'; });`;

describe('gRPC ModelInfer: the worker reads and writes the protobuf', () => {
  let t: TestServer;
  let c: GrpcClients;
  before(async () => {
    t = await startTestServer('grpc_inference_port=0');
    const loads = [
      loadModel(t, 'echo', writeModelDir(t.store, 'echo', identityModel('float32')), {
        batch_size: 8,
        max_batch_delay: 50,
      }),
      loadModel(t, 'json', writeModelDir(t.store, 'json', identityModel('float32'), { 'handler.js': kJsonHandler })),
    ];
    for (const r of await Promise.all(loads)) assert.equal(r.status, 200, r.text);
    c = grpcClients(t.server.grpc!.port);
  });
  after(async () => {
    c.close();
    await t.close();
  });

  it("concurrent callers in shared batches each get their own tensors back, never another's", async () => {
    const row = fc.array(fc.float({ noNaN: true }), { minLength: 1, maxLength: 6 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(row, fc.boolean()), { minLength: 2, maxLength: 12 }), async (calls) => {
        const answers = await Promise.all(
          calls.map(([values, raw], i) =>
            unary(c.kserve, 'ModelInfer', {
              model_name: 'echo',
              id: `caller-${i}`,
              inputs: [
                {
                  name: 'x',
                  datatype: 'FP32',
                  shape: [1, values.length],
                  ...(raw ? {} : { contents: { fp32_contents: values } }),
                },
              ],
              ...(raw ? { raw_input_contents: [f32(values)] } : {}),
            }),
          ),
        );
        calls.forEach(([values, raw], i) => {
          const a = answers[i];
          assert.equal(a.id, `caller-${i}`);
          if (raw) assert.deepEqual(a.raw_output_contents, [f32(values)]);
          else assert.deepEqual(a.outputs[0].contents.fp32_contents, Array.from(new Float32Array(values)));
        });
      }),
      { numRuns: 15 },
    );
  });

  it("a handler that answers another type than the request's is the model's error, naming both types", async () => {
    const err = await failure(
      unary(c.kserve, 'ModelInfer', {
        model_name: 'json',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1] }],
        raw_input_contents: [f32([1])],
      }),
    );
    assert.equal(err.code, Status.INTERNAL);
    assert.deepEqual(err.metadata.get('mme-error-code'), ['MME_ERR_MODEL_ERROR']);
    assert.match(
      err.details,
      /Model json answered ModelInfer with Content-Type application\/json; its handler must answer requests of Content-Type application\/vnd\.kserve\.model-infer\+protobuf/,
    );
  });

  it('over HTTP the same Content-Type meets the same codec: an answer in protobuf, and bytes that are not protobuf a 400', async () => {
    const post = (body: Buffer) =>
      fetch(`${t.url}/models/echo/invoke`, {
        method: 'POST',
        body,
        headers: { 'content-type': MODEL_INFER_MEDIA_TYPE, accept: MODEL_INFER_MEDIA_TYPE },
      });
    const ok = await post(
      method.requestSerialize({
        model_name: 'echo',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }],
        raw_input_contents: [f32([3, 4])],
      }),
    );
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('content-type'), MODEL_INFER_MEDIA_TYPE);
    const answer = method.responseDeserialize(Buffer.from(await ok.arrayBuffer())) as { raw_output_contents: Buffer[] };
    assert.deepEqual(answer.raw_output_contents, [f32([3, 4])]);
    const bad = await post(Buffer.from([0x2a, 0x05, 0x0a]));
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /is not a KServe ModelInferRequest \(malformed protobuf at byte 0\)/);
  });
});
