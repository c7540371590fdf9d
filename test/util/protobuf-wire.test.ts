/**
 * The protobuf wire reader (src/util/protobuf-wire.ts) over bytes written by hand: varints, each
 * wire type's span, and every way a field can run past its message, which must read as null (the
 * callers' "refuse") and never as a field.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BufferReader } from '../../src/util/protobuf-wire';
import { field, text, varint } from '../helpers/protobuf-wire';

const reader = (...parts: Array<Buffer | number[]>) =>
  new BufferReader(Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p)))));

describe('util/protobuf-wire: the wire reader', () => {
  it('reads varints of one to ten bytes, and says where each ended', () => {
    const r = reader([0x00, 0x7f, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert.equal(r.varint(0, 9), 0);
    assert.equal(r.varint(1, 9), 127);
    assert.equal(r.varint(2, 9), 300);
    assert.equal(r.varintEnd, 4);
    assert.equal(r.varint(4, 9), 2 ** 32 - 1);
    assert.equal(r.varintEnd, 9);
  });

  it('gives -1 for a varint cut short by the end, or longer than allowed', () => {
    const r = reader([0xac, 0x02]);
    assert.equal(r.varint(0, 1), -1, 'the end falls inside it');
    assert.equal(r.varint(0, 2, 1), -1, 'longer than one byte');
    assert.equal(reader(Array<number>(11).fill(0x80)).varint(0, 11), -1, 'eleven bytes: no varint is that long');
  });

  it("gives each wire type's span: varint, fixed64, length-delimited, fixed32", () => {
    const bytes = Buffer.concat([
      Buffer.from([0x08, 0x96, 0x01]), // field 1, varint 150
      Buffer.from([0x11, 1, 2, 3, 4, 5, 6, 7, 8]), // field 2, fixed64
      text(3, 'hé'), // field 3, 3 bytes
      Buffer.from([0x25, 9, 9, 9, 9]), // field 4, fixed32
    ]);
    const r = new BufferReader(bytes);
    assert.deepEqual(
      [...r.fields(0, bytes.length)].map((f) => [f.field, f.wire, f.start, f.payload, f.end, f.varint]),
      [
        [1, 0, 0, 1, 3, 150],
        [2, 1, 3, 4, 12, 0],
        [3, 2, 12, 14, 17, 0],
        [4, 5, 17, 18, 22, 0],
      ],
    );
    assert.equal(r.text(r.field(12, bytes.length)!), 'hé');
  });

  it('reads null for a field that runs past its message: a length, a fixed value, a varint or a tag cut short', () => {
    assert.equal(reader(field(1, Buffer.from('abc'))).field(0, 4), null, 'the payload ends past the message');
    assert.equal(reader([0x11, 1, 2, 3]).field(0, 4), null, 'fixed64 with four bytes');
    assert.equal(reader([0x25, 1]).field(0, 2), null, 'fixed32 with one byte');
    assert.equal(reader([0x08, 0x80]).field(0, 2), null, 'a varint value cut short');
    assert.equal(reader([0x0a, 0xff]).field(0, 2), null, 'a length cut short');
    assert.equal(reader([0x80]).field(0, 1), null, 'a tag cut short');
    // Within a window: a field that fits the buffer but not the message it belongs to.
    const inner = text(1, 'abcdef');
    assert.equal(reader(inner).field(0, inner.length - 1), null);
  });

  it('stops a walk at a group or an unknown wire type (the field comes back alone), and before anything malformed', () => {
    const group = reader([0x08, 0x01, 0x0b, 0x08, 0x02, 0x0c]);
    assert.deepEqual(
      [...group.fields(0, 6)].map((f) => [f.field, f.wire, f.payload]),
      [
        [1, 0, 1],
        [1, 3, 3],
      ],
    );
    const unknown = reader([0x0e, 0x08, 0x01]); // field 1, wire type 6
    assert.deepEqual(
      [...unknown.fields(0, 3)].map((f) => [f.field, f.wire]),
      [[1, 6]],
    );
    const cut = reader([0x08, 0x01, 0x12, 0x05, 0x61]);
    assert.deepEqual(
      [...cut.fields(0, 5)].map((f) => f.field),
      [1],
    );
  });

  it('reads back any sequence of well-formed fields as written', () => {
    const spec = fc.array(
      fc.oneof(
        fc.record({ n: fc.integer({ min: 1, max: 2 ** 29 - 1 }), v: fc.nat() }).map((x) => ({ ...x, wire: 0 })),
        fc.record({ n: fc.integer({ min: 1, max: 2 ** 29 - 1 }), v: fc.uint8Array({ maxLength: 300 }) }).map((x) => ({
          ...x,
          wire: 2,
        })),
      ),
      { maxLength: 20 },
    );
    fc.assert(
      fc.property(spec, (fields) => {
        const bytes = Buffer.concat(
          fields.map((f) =>
            f.wire === 0
              ? Buffer.concat([varint(f.n * 8), varint(f.v as number)])
              : field(f.n, Buffer.from(f.v as Uint8Array)),
          ),
        );
        const r = new BufferReader(bytes);
        const read = [...r.fields(0, bytes.length)];
        assert.equal(read.length, fields.length);
        read.forEach((got, i) => {
          const want = fields[i];
          assert.deepEqual([got.field, got.wire], [want.n, want.wire]);
          if (want.wire === 0) assert.equal(got.varint, want.v);
          else assert.deepEqual(bytes.subarray(got.payload, got.end), Buffer.from(want.v as Uint8Array));
        });
      }),
    );
  });
});
