import assert from 'node:assert/strict';
import {
  inferRequestProblem,
  MAX_ENTRIES,
  MAX_TYPED_BYTES_ELEMENTS,
  predictionsRequestProblem,
} from '../../src/grpc/message-limits';
import { field, text, varint } from '../helpers/protobuf-wire';

/** An empty group on `number`: its start tag (wire type 3) and end tag (wire type 4). */
const group = (number: number): Buffer => Buffer.concat([varint(number * 8 + 3), varint(number * 8 + 4)]);
/** One BYTES input (ModelInferRequest field 5) with `n` empty bytes_contents (InferTensorContents field 8). */
const bytesInput = (n: number): Buffer =>
  field(
    5,
    Buffer.concat([
      text(1, 'x'),
      text(2, 'BYTES'),
      field(5, Buffer.concat(Array.from({ length: n }, () => field(8, Buffer.alloc(0))))),
    ]),
  );

describe('gRPC message limits: the wire walk', () => {
  it('refuses a ModelInferRequest with a group anywhere it walks, so nothing after it goes uncounted', () => {
    const over = bytesInput(MAX_TYPED_BYTES_ELEMENTS + 1);
    assert.match(inferRequestProblem(Buffer.concat([text(1, 'm'), over]))!, /bytes_contents elements/);
    for (const [where, message] of [
      ['top level, before the input', Buffer.concat([text(1, 'm'), group(15), over])],
      ['an end-group tag alone', Buffer.concat([text(1, 'm'), varint(15 * 8 + 4), over])],
      ['inside an input', field(5, Buffer.concat([text(1, 'x'), group(9)]))],
      ['inside typed contents', field(5, field(5, Buffer.concat([group(9), field(8, Buffer.alloc(0))])))],
    ] as const) {
      assert.match(
        inferRequestProblem(message) ?? 'null',
        /has a group \(field \d+, wire type [34]\); proto3 messages have none/,
        where,
      );
    }
  });

  it('refuses a PredictionsRequest with a group before its input entries', () => {
    const entries = Array.from({ length: MAX_ENTRIES + 1 }, () =>
      field(3, Buffer.concat([text(1, 'k'), text(2, 'v')])),
    );
    assert.match(predictionsRequestProblem(Buffer.concat([text(1, 'm'), ...entries]))!, /input entries/);
    assert.match(
      predictionsRequestProblem(Buffer.concat([text(1, 'm'), group(7), ...entries])) ?? 'null',
      /PredictionsRequest has a group/,
    );
  });

  it('refuses wire types 6 and 7, and a declared field whose tag has another wire type, which protobufjs would decode as declared past the walk', () => {
    const over = bytesInput(MAX_TYPED_BYTES_ELEMENTS + 1);
    // The boundary property's counterexample: field 7 (raw_input_contents), wire type 7, one byte,
    // then the over-limit input. protobufjs read the tag as raw_input_contents and went on.
    const rawContentsWire7 = Buffer.concat([varint(7 * 8 + 7), Buffer.from([0])]);
    assert.match(
      inferRequestProblem(Buffer.concat([text(1, 'm'), rawContentsWire7, over])) ?? 'null',
      /field of wire type 7 \(field 7\), which protobuf does not have/,
    );
    for (const [where, message, pattern] of [
      [
        'wire type 6, unknown field',
        Buffer.concat([text(1, 'm'), varint(15 * 8 + 6), Buffer.from([0]), over]),
        /wire type 6/,
      ],
      [
        'inputs (a message) as a varint, its would-be payload walked as top-level fields',
        Buffer.concat([text(1, 'm'), varint(5 * 8 + 0), varint(over.length), over]),
        /field 5 comes with wire type 0, not its declared type's \(2\)/,
      ],
      [
        'bytes_contents as fixed32',
        field(5, field(5, Buffer.concat([varint(8 * 8 + 5), Buffer.alloc(4)]))),
        /field 8 comes with wire type 5/,
      ],
      [
        'fp32_contents as fixed64',
        field(5, field(5, Buffer.concat([varint(6 * 8 + 1), Buffer.alloc(8)]))),
        /field 6 comes with wire type 1/,
      ],
    ] as const)
      assert.match(inferRequestProblem(message) ?? 'null', pattern, where);
    assert.match(
      predictionsRequestProblem(Buffer.concat([text(1, 'm'), varint(3 * 8 + 7), Buffer.from([0])])) ?? 'null',
      /PredictionsRequest has a field of wire type 7/,
    );
    assert.match(
      predictionsRequestProblem(Buffer.concat([varint(1 * 8 + 5), Buffer.alloc(4)])) ?? 'null',
      /PredictionsRequest's field 1 comes with wire type 5/,
    );
  });

  it('refuses a group inside a map entry or a parameter, which protobufjs skips inside the entry and decodes the rest', () => {
    // The boundary property's counterexample (seed 49441070): a group inside Predictions' "data" entry answered OK.
    const entry = field(3, Buffer.concat([text(1, 'data'), group(3), text(2, '[[1]]')]));
    assert.match(
      predictionsRequestProblem(Buffer.concat([text(1, 'm'), entry])) ?? 'null',
      /PredictionsRequest has a group/,
    );
    const parameter = field(4, Buffer.concat([text(1, 'p'), field(2, group(1))]));
    assert.match(
      inferRequestProblem(Buffer.concat([text(1, 'm'), parameter])) ?? 'null',
      /ModelInferRequest has a group/,
    );
    const outputParameter = field(6, Buffer.concat([text(1, 'y'), field(2, Buffer.concat([text(1, 'p'), group(9)]))]));
    assert.match(inferRequestProblem(Buffer.concat([text(1, 'm'), outputParameter])) ?? 'null', /has a group/);
    const boolAsFixed = field(
      4,
      Buffer.concat([text(1, 'p'), field(2, Buffer.concat([varint(1 * 8 + 5), Buffer.alloc(4)]))]),
    );
    assert.match(
      inferRequestProblem(Buffer.concat([text(1, 'm'), boolAsFixed])) ?? 'null',
      /field 1 comes with wire type 5/,
    );
  });

  it('takes every declared wire type: packed and unpacked shapes and typed contents', () => {
    const input = field(
      5,
      Buffer.concat([
        text(1, 'x'),
        text(2, 'FP32'),
        varint(3 * 8 + 0),
        varint(1),
        field(3, varint(2)),
        field(
          5,
          Buffer.concat([varint(6 * 8 + 5), Buffer.alloc(4), field(6, Buffer.alloc(4)), varint(2 * 8 + 0), varint(1)]),
        ),
      ]),
    );
    const parameters = field(4, Buffer.concat([text(1, 'p'), field(2, Buffer.concat([varint(2 * 8 + 0), varint(7)]))]));
    assert.equal(inferRequestProblem(Buffer.concat([text(1, 'm'), parameters, input])), null);
    assert.equal(
      predictionsRequestProblem(
        Buffer.concat([text(1, 'm'), field(3, Buffer.concat([text(1, 'data'), text(2, '[[1]]')]))]),
      ),
      null,
    );
  });

  it('walks every other wire type: varint, fixed64, fixed32 and length-delimited fields are counted past', () => {
    const scalars = Buffer.concat([
      varint(20 * 8 + 0),
      varint(300),
      varint(21 * 8 + 1),
      Buffer.alloc(8),
      varint(22 * 8 + 5),
      Buffer.alloc(4),
      text(23, 'unknown'),
    ]);
    assert.match(
      inferRequestProblem(Buffer.concat([text(1, 'm'), scalars, bytesInput(MAX_TYPED_BYTES_ELEMENTS + 1)]))!,
      /bytes_contents elements/,
    );
    assert.equal(inferRequestProblem(Buffer.concat([text(1, 'm'), scalars, bytesInput(3)])), null);
  });
});
