/**
 * The door's walk of a ModelInferRequest against proto-loader's, the reference: every message the
 * walk vouches for has the model name and version proto-loader reads, and goes on as its bytes;
 * everything else is left to the limits walk and proto-loader (null).
 */
import assert from 'node:assert/strict';
import type { MethodDefinition } from '@grpc/grpc-js';
import { inferHead } from '../../src/grpc/infer-codec';
import { serviceDefinitions } from '../../src/grpc/protos';
import { field, text, varint } from '../helpers/protobuf-wire';
import { f32 } from '../../harness/float32';

const method = (serviceDefinitions().kserve.service as unknown as Record<string, MethodDefinition<unknown, unknown>>)
  .ModelInfer;
const encodeRequest = (req: object) => method.requestSerialize(req);

describe('gRPC ModelInfer: the door reads the head of a request (beside proto-loader)', () => {
  it('a raw-contents request: its model name and version as proto-loader reads them, and its bytes as they came', () => {
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
      const head = inferHead(bytes);
      assert.ok(head, `${what}: left to proto-loader`);
      const { model_name, model_version } = method.requestDeserialize(bytes) as Record<string, unknown>;
      assert.deepEqual(head, { model_name, model_version, controls: {}, bytes }, what);
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
    for (const [what, bytes] of cases) assert.equal(inferHead(bytes), null, what);
  });
});
