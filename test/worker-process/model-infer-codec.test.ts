/**
 * The worker's ModelInfer codec (src/worker-process/model-infer-codec.ts) against proto-loader's,
 * the reference: requests proto-loader encodes decode to the tensors their contents hold, typed or
 * raw; answers decode under proto-loader as the ModelInferResponse the old door built; and every
 * byte sequence that is not protobuf is INVALID_INPUT naming its byte.
 */
import assert from 'node:assert/strict';
import type { MethodDefinition } from '@grpc/grpc-js';
import { serviceDefinitions } from '../../src/grpc/protos';
import type { TensorInfo } from '../../src/model-types';
import { MODEL_INFER_MEDIA_TYPE } from '../../src/protocol/messages';
import type { EncodeMeta } from '../../src/worker-process/json-codec';
import { decodeModelInfer, encodeModelInfer } from '../../src/worker-process/model-infer-codec';
import { RequestBudget, type PlainTensor } from '../../src/worker-process/tensor';
import { field, text, varint } from '../helpers/protobuf-wire';
import { throwsMme } from '../helpers/throws-mme';
import { f32 } from '../../harness/float32';

const method = (serviceDefinitions().kserve.service as unknown as Record<string, MethodDefinition<unknown, unknown>>)
  .ModelInfer;
const encode = (req: object) => method.requestSerialize(req);
type Answer = { id: string; model_version: string; outputs: Array<Record<string, any>>; raw_output_contents: Buffer[] };
const answerOf = (body: Buffer) => method.responseDeserialize(body) as Answer;

const decode = (body: Buffer, inputs: TensorInfo[]) =>
  decodeModelInfer(
    { body, contentType: MODEL_INFER_MEDIA_TYPE, accept: MODEL_INFER_MEDIA_TYPE, headers: {}, requestId: 'r' },
    inputs,
    new RequestBudget(1 << 20, body.length + 1024),
  );

/** Every datatype with typed contents: its model type, its contents field, values and what they read back as. */
const kTyped: Array<[string, string, string, unknown[], unknown[]]> = [
  ['BOOL', 'bool', 'bool_contents', [true, false], [1, 0]],
  ['INT8', 'int8', 'int_contents', [-128, 127], [-128, 127]],
  ['INT32', 'int32', 'int_contents', [-2147483648, 7], [-2147483648, 7]],
  ['INT64', 'int64', 'int64_contents', ['-9007199254740993', '1'], [-9007199254740993n, 1n]],
  ['UINT16', 'uint16', 'uint_contents', [65535, 0], [65535, 0]],
  ['UINT64', 'uint64', 'uint64_contents', ['18446744073709551615', '0'], [18446744073709551615n, 0n]],
  ['FP32', 'float32', 'fp32_contents', [0.5, -2], [0.5, -2]],
  ['FP64', 'float64', 'fp64_contents', [1e300, -0.25], [1e300, -0.25]],
  ['BYTES', 'string', 'bytes_contents', [Buffer.from('größe'), Buffer.alloc(0)], ['größe', '']],
];

describe('worker-process/model-infer-codec: KServe ModelInfer protobuf ⇄ tensors', () => {
  it('reads typed contents of every datatype, packed or not, and raw contents, into the same tensors', () => {
    for (const [datatype, type, contentsField, values, expected] of kTyped) {
      const info = [{ name: 'x', type, shape: [-1] }];
      const typed = decode(
        encode({
          model_name: 'm',
          inputs: [{ name: 'x', datatype, shape: [2], contents: { [contentsField]: values } }],
        }),
        info,
      );
      assert.deepEqual(Array.from(typed.feeds.x.data as ArrayLike<unknown>), expected, datatype);
      assert.equal(typed.selection?.binaryAll, false, datatype);
    }
    // Unpacked int32 (a negative one in ten bytes, as protobuf writes it) and an unpacked shape.
    const unpacked = Buffer.concat([
      field(
        5,
        Buffer.concat([
          text(1, 'x'),
          text(2, 'INT32'),
          varint(3 * 8),
          varint(2),
          field(
            5,
            Buffer.concat([varint(2 * 8), Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]), varint(2 * 8), varint(5)]),
          ),
        ]),
      ),
    ]);
    assert.deepEqual(
      [...(decode(unpacked, [{ name: 'x', type: 'int32', shape: [2] }]).feeds.x.data as Int32Array)],
      [-1, 5],
    );
    const raw = decode(
      encode({
        model_name: 'm',
        id: 'r-1',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }],
        outputs: [{ name: 'y' }],
        raw_input_contents: [f32([1, 2])],
      }),
      [{ name: 'x', type: 'float32', shape: [-1, 2] }],
    );
    assert.deepEqual([...(raw.feeds.x.data as Float32Array)], [1, 2]);
    assert.deepEqual([raw.id, raw.selection], ['r-1', { outputs: [{ name: 'y' }], binaryAll: true }]);
  });

  it('answers typed contents for a typed request and raw_output_contents for a raw one (or an FP16 output), as proto-loader reads them', () => {
    const infos: TensorInfo[] = [{ name: 'label', type: 'int64', shape: [-1], classLabels: ['cat', 'dog'] }];
    const outputs: Record<string, PlainTensor> = {
      y: { type: 'float32', dims: [1, 2], data: Float32Array.of(0.5, -1) },
      label: { type: 'int64', dims: [2], data: BigInt64Array.of(-3n, 9007199254740993n) },
      ok: { type: 'bool', dims: [1], data: Uint8Array.of(1) },
      s: { type: 'string', dims: [2], data: ['a', 'ü'] },
    };
    const meta = (binaryAll: boolean): EncodeMeta => ({
      format: 'v2',
      modelName: 'm',
      id: 'r-2',
      accept: MODEL_INFER_MEDIA_TYPE,
      outputs: infos,
      selection: { binaryAll },
    });
    const typed = answerOf(encodeModelInfer(outputs, meta(false)).body);
    assert.deepEqual([typed.id, typed.model_version, typed.raw_output_contents], ['r-2', '1', []]);
    const [y, label, ok, s] = typed.outputs;
    assert.deepEqual([y.name, y.datatype, y.shape, y.contents.fp32_contents], ['y', 'FP32', ['1', '2'], [0.5, -1]]);
    assert.deepEqual(label.contents.int64_contents, ['-3', '9007199254740993']);
    assert.deepEqual(label.parameters.class_labels.string_param, '["cat","dog"]');
    assert.deepEqual(ok.contents.bool_contents, [true]);
    assert.deepEqual(s.contents.bytes_contents, [Buffer.from('a'), Buffer.from('ü')]);
    const raw = answerOf(encodeModelInfer(outputs, meta(true)).body);
    assert.equal(raw.outputs[0].contents, null);
    assert.deepEqual(raw.raw_output_contents[0], f32([0.5, -1]));
    const half = { h: { type: 'float16', dims: [1], data: Uint16Array.of(0x3c00) } };
    assert.deepEqual(answerOf(encodeModelInfer(half, meta(false)).body).raw_output_contents, [Buffer.from([0, 0x3c])]);
  });

  it('bytes that are not protobuf are INVALID_INPUT naming the byte, at every depth (an HTTP client may send this type)', () => {
    const info: TensorInfo[] = [{ name: 'x', type: 'float32', shape: [-1] }];
    const input = (payload: Buffer) => field(5, Buffer.concat([text(1, 'x'), text(2, 'FP32'), payload]));
    const cases: Array<[string, Buffer]> = [
      ['a length past the end', Buffer.from([0x0a, 0x05, 0x61])],
      ['a group', Buffer.concat([text(1, 'm'), Buffer.from([0x9b, 0x01])])],
      ['a field cut short inside an input', input(Buffer.from([0x1a, 0x09]))],
      ['a packed shape whose last varint never ends', input(field(3, Buffer.from([0x01, 0x81])))],
      ['contents cut short', input(field(5, Buffer.from([0x32, 0x08, 0, 0])))],
      ['packed fp32 contents not a whole number of floats', input(field(5, field(6, Buffer.alloc(6))))],
      [
        'a varint past 64 bits',
        input(field(3, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))),
      ],
    ];
    const malformed = /is not a KServe ModelInferRequest \(malformed protobuf at byte \d+\)/;
    for (const [what, body] of cases)
      assert.doesNotThrow(() => throwsMme(() => decode(body, info), 'MME_ERR_INVALID_INPUT', malformed), what);
  });
});
