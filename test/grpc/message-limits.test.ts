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
