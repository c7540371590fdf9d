/**
 * ModelInfer's own codecs against proto-loader's, the reference: every message the fast decoder
 * takes decodes to the object proto-loader builds, everything else is left to proto-loader (null),
 * and every answer the fast encoder writes decodes as proto-loader's encoding of it does.
 */
import assert from 'node:assert/strict';
import type { MethodDefinition } from '@grpc/grpc-js';
import { decodeInferRequest, encodeInferResponse } from '../../src/grpc/infer-codec';
import type { ModelInferResponse } from '../../src/grpc/kserve-tensors';
import { serviceDefinitions } from '../../src/grpc/protos';
import { field, text, varint } from '../helpers/protobuf-wire';
import { f32 } from '../../harness/float32';

const method = (serviceDefinitions().kserve.service as unknown as Record<string, MethodDefinition<unknown, unknown>>)
  .ModelInfer;
const encodeRequest = (req: object) => method.requestSerialize(req);

describe('gRPC ModelInfer codecs (fast path beside proto-loader)', () => {
  it('a raw-contents request decodes to exactly what proto-loader builds', () => {
    const requests: Array<[string, Buffer]> = [
      [
        'one raw input',
        encodeRequest({
          model_name: 'tiny',
          inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16] }],
          raw_input_contents: [f32(new Array(16).fill(0.5))],
        }),
      ],
      [
        'id, version, outputs, two inputs, non-ASCII names',
        encodeRequest({
          model_name: 'modèle',
          model_version: '1',
          id: 'req-7',
          inputs: [
            { name: 'a', datatype: 'FP32', shape: [2, 2] },
            { name: 'b✓', datatype: 'INT64', shape: ['562949953421311'] },
          ],
          outputs: [{ name: 'y' }, { name: '' }],
          raw_input_contents: [f32([1, 2, 3, 4]), Buffer.alloc(0)],
        }),
      ],
      ['no inputs at all', encodeRequest({ model_name: 'm' })],
      ['an empty message', Buffer.alloc(0)],
      [
        'an unpacked shape and unknown fields of every wire type',
        Buffer.concat([
          text(1, 'mlp'),
          field(
            5,
            Buffer.concat([
              text(1, 'input'),
              text(2, 'FP32'),
              varint(3 * 8),
              varint(1),
              varint(3 * 8),
              varint(4),
              varint(9 * 8),
              varint(300),
            ]),
          ),
          varint(20 * 8 + 1),
          Buffer.alloc(8),
          varint(21 * 8 + 5),
          Buffer.alloc(4),
          text(22, 'ignored'),
          varint(23 * 8),
          varint(5),
          field(7, f32([1, 2, 3, 4])),
          text(1, 'last-wins'),
        ]),
      ],
    ];
    for (const [what, bytes] of requests) {
      const fast = decodeInferRequest(bytes);
      assert.ok(fast, `${what}: left to proto-loader`);
      assert.deepEqual(fast, method.requestDeserialize(bytes), what);
    }
  });

  it('leaves to proto-loader what it does not take: typed contents, parameters, long dimensions, counts over a limit, malformed protobuf', () => {
    const input = { name: 'a', datatype: 'FP32', shape: [1] };
    const cases: Array<[string, Buffer]> = [
      ['typed contents', encodeRequest({ model_name: 'm', inputs: [{ ...input, contents: { fp32_contents: [1] } }] })],
      ['request parameters', encodeRequest({ model_name: 'm', parameters: { p: { bool_param: true } } })],
      [
        'input parameters',
        encodeRequest({ model_name: 'm', inputs: [{ ...input, parameters: { p: { string_param: 'x' } } }] }),
      ],
      [
        'output parameters',
        encodeRequest({ model_name: 'm', outputs: [{ name: 'y', parameters: { p: { int64_param: '1' } } }] }),
      ],
      [
        'a dimension past 2^49',
        encodeRequest({ model_name: 'm', inputs: [{ ...input, shape: ['9007199254740993'] }] }),
      ],
      ['a negative dimension', encodeRequest({ model_name: 'm', inputs: [{ ...input, shape: [-1] }] })],
      ['1025 inputs', Buffer.concat(Array.from({ length: 1025 }, () => field(5, Buffer.alloc(0))))],
      ['1025 outputs', Buffer.concat(Array.from({ length: 1025 }, () => field(6, Buffer.alloc(0))))],
      ['1025 raw_input_contents', Buffer.concat(Array.from({ length: 1025 }, () => field(7, Buffer.alloc(0))))],
      ['65 dimensions', field(5, field(3, Buffer.concat(new Array(65).fill(varint(1)))))],
      ['a length past the end', Buffer.from([0x0a, 0x05, 0x61])],
      ['a varint that never ends', Buffer.from([0x0a, 0xff])],
      ['a known field with the wrong wire type', Buffer.from([0x08, 0x01])],
      ['a group', Buffer.from([0x9b, 0x01])],
    ];
    for (const [what, bytes] of cases) assert.equal(decodeInferRequest(bytes), null, what);
  });

  it('a raw answer encodes to bytes proto-loader decodes as its own encoding; typed contents and parameters are left to proto-loader', () => {
    const answer: ModelInferResponse = {
      model_name: 'tiny',
      model_version: '1',
      id: '',
      outputs: [
        { name: 'output', datatype: 'FP32', shape: [1, 4], parameters: {} },
        { name: 'größe', datatype: 'INT64', shape: [2 ** 40, 0], parameters: {} },
        { name: 'scalar', datatype: 'BOOL', shape: [], parameters: {} },
      ],
      raw_output_contents: [f32([1, 2, 3, 4]), Buffer.alloc(0), Buffer.from([1])],
    };
    const fast = encodeInferResponse(answer);
    assert.ok(fast);
    assert.deepEqual(method.responseDeserialize(fast), method.responseDeserialize(method.responseSerialize(answer)));
    const typed = {
      ...answer,
      outputs: [{ ...answer.outputs[0], contents: { fp32_contents: [1, 2, 3, 4] } }],
      raw_output_contents: [],
    };
    assert.equal(encodeInferResponse(typed), null);
    const labelled = {
      ...answer,
      outputs: [{ ...answer.outputs[0], parameters: { class_labels: { string_param: '["a"]' } } }],
    };
    assert.equal(encodeInferResponse(labelled), null);
  });
});
