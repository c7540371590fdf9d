/**
 * ModelInfer's remembered translations against the ones they stand for: every call, first or
 * repeated, gives the bytes toOipBody and fromOipAnswer + encodeInferResponse give, and whatever
 * varies between calls of one shape (raw sizes, the answer's binary length) is checked on a hit.
 */
import assert from 'node:assert/strict';
import type { MethodDefinition } from '@grpc/grpc-js';
import { oipAnswer } from '../../src/gateway/oip/infer-request';
import {
  decodeInferRequest,
  EncodedAnswer,
  encodeInferResponse,
  MAX_KEY_BYTES,
  wireKeyOf,
} from '../../src/grpc/infer-codec';
import { answerOf, oipBodyOf } from '../../src/grpc/infer-memo';
import { fromOipAnswer, toOipBody, type ModelInferRequest } from '../../src/grpc/kserve-tensors';
import { serviceDefinitions } from '../../src/grpc/protos';
import { joinBody, oipContentType } from '../../src/oip/binary-body';
import type { InvokeResult } from '../../src/server/jobs/job';
import { field, text } from '../helpers/protobuf-wire';
import { f32 } from '../../harness/float32';

const method = (serviceDefinitions().kserve.service as unknown as Record<string, MethodDefinition<unknown, unknown>>)
  .ModelInfer;

function request(shape: number[], raw: Buffer, more: object = {}): ModelInferRequest {
  const bytes = method.requestSerialize({
    model_name: 'memo-model',
    inputs: [{ name: 'input', datatype: 'FP32', shape }],
    raw_input_contents: [raw],
    ...more,
  });
  return decodeInferRequest(bytes)!;
}

const joined = (body: Buffer | readonly Buffer[]) => Buffer.concat(Array.isArray(body) ? body : [body as Buffer]);

function expectedBody(req: ModelInferRequest): Buffer {
  const { header, binaries } = toOipBody(req);
  return Buffer.concat([header, ...binaries]);
}

function workerAnswer(outputs: object[], binaries: Buffer[]): InvokeResult {
  const { body, headerLength } = joinBody({ model_name: 'memo-model', outputs }, binaries);
  return {
    status: 200,
    contentType: oipContentType(headerLength),
    headers: {},
    body,
    modelMicros: 0,
    queueMicros: 0,
    batchSize: 1,
  };
}

const output = (name: string, shape: number[], size: number, parameters: object = {}) => ({
  name,
  datatype: 'FP32',
  shape,
  parameters: { binary_data_size: size, ...parameters },
});

describe('gRPC ModelInfer translations remembered by their bytes', () => {
  it('a request gives the body toOipBody builds, first call and repeated, and a new raw size its own header', () => {
    for (const [shape, raw] of [
      [[1, 4], f32([1, 2, 3, 4])],
      [[1, 4], f32([5, 6, 7, 8])],
      [[1, 2], f32([1, 2, 3, 4])], // the shape is in the key: a miss, built afresh
      [[1, 4], f32([1, 2])], // same key, another raw size: the header is rebuilt with it
      [[1, 4], f32([1, 2, 3, 4])],
    ] as Array<[number[], Buffer]>) {
      const req = request(shape, raw);
      const { body, headerLength } = oipBodyOf(req);
      assert.deepEqual(joined(body), expectedBody(req));
      assert.equal(headerLength, toOipBody(req).header.length);
    }
    // A shape toOipBody refuses is refused on every call, never remembered.
    const bad = request([1, 4], f32([1, 2, 3, 4]), { inputs: [{ name: 'input', datatype: 'FP33', shape: [1, 4] }] });
    for (let i = 0; i < 2; i++) assert.throws(() => oipBodyOf(bad), /datatype "FP33"/);
  });

  it('keys only requests whose fields come before their raw contents, that have no id and a short prefix', () => {
    assert.equal(typeof wireKeyOf(request([1, 4], f32([1, 2, 3, 4]))), 'string');
    assert.equal(wireKeyOf(request([1, 4], f32([1, 2, 3, 4]), { id: 'req-1' })), undefined);
    const late = decodeInferRequest(
      Buffer.concat([
        field(5, Buffer.concat([text(1, 'input'), text(2, 'FP32'), field(3, Buffer.from([1, 4]))])),
        field(7, f32([1, 2, 3, 4])),
        text(1, 'memo-model'),
      ]),
    )!;
    assert.equal(late.model_name, 'memo-model');
    assert.equal(wireKeyOf(late), undefined);
    // A long prefix is never a key: the tables stay small whatever names a client sends.
    const long = request([1, 4], f32([1, 2, 3, 4]), {
      inputs: [{ name: 'x'.repeat(MAX_KEY_BYTES), datatype: 'FP32', shape: [1, 4] }],
    });
    assert.equal(wireKeyOf(long), undefined);
    assert.deepEqual(joined(oipBodyOf(long).body), expectedBody(long));
    const untyped = decodeInferRequest(text(1, 'memo-model'))!;
    assert.equal(wireKeyOf(untyped), undefined);
  });

  it('an answer encodes as fromOipAnswer + encodeInferResponse would, first call and repeated', () => {
    const req = request([1, 4], f32([1, 2, 3, 4]));
    for (const values of [
      [1, 2],
      [3, 4],
      [5, 6],
    ]) {
      const result = workerAnswer([output('y', [1, 2], 8)], [f32(values)]);
      const expected = encodeInferResponse(fromOipAnswer(oipAnswer('memo-model', result), true))!;
      const got = answerOf(req, result);
      assert.ok(got instanceof EncodedAnswer);
      assert.deepEqual(got.bytes, expected);
    }
    // A header past MAX_KEY_BYTES takes the object path (the codec encodes it) on every call.
    const long = workerAnswer([output('y'.repeat(MAX_KEY_BYTES), [1, 2], 8)], [f32([1, 2])]);
    for (let i = 0; i < 2; i++)
      assert.deepEqual(answerOf(req, long), fromOipAnswer(oipAnswer('memo-model', long), true));
    // The same header with the wrong binary length is refused as before, hit or not.
    const short = workerAnswer([output('y', [1, 2], 8)], [f32([1])]);
    for (let i = 0; i < 2; i++) assert.throws(() => answerOf(req, short), /add up to 8 bytes, but 4 bytes/);
  });

  it('leaves typed answers and answers with output parameters to the object path', () => {
    const typedReq = decodeInferRequest(
      method.requestSerialize({ model_name: 'memo-model', inputs: [{ name: 'input', datatype: 'FP32', shape: [0] }] }),
    )!;
    const plain = workerAnswer([output('y', [1, 2], 8)], [f32([1, 2])]);
    const typed = answerOf(typedReq, plain);
    assert.ok(!(typed instanceof EncodedAnswer));
    assert.deepEqual(typed, fromOipAnswer(oipAnswer('memo-model', plain), false));
    const req = request([1, 4], f32([1, 2, 3, 4]));
    const labelled = workerAnswer([output('y', [1, 2], 8, { class_labels: ['a'] })], [f32([1, 2])]);
    for (let i = 0; i < 2; i++) {
      const res = answerOf(req, labelled);
      assert.ok(!(res instanceof EncodedAnswer));
      assert.deepEqual(res, fromOipAnswer(oipAnswer('memo-model', labelled), true));
    }
  });
});
