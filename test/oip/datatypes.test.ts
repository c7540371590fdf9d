/**
 * The OIP v2 datatypes and their raw layout (src/oip/datatypes.ts): names to onnxruntime's and
 * back, raw bytes to typed arrays and back (little-endian, unpadded; BYTES as u32 length + bytes),
 * typed contents checked against each datatype's range. Expected bytes are written out by hand
 * here, not produced by the module.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  fromRaw,
  ortTypeOf,
  rawStrings,
  toArray,
  toRaw,
  V2_DATATYPES,
  v2Datatype,
  type NumericArray,
} from '../../src/oip/datatypes';
import { isMmeError } from '../../src/errors';

/** Throws MME_ERR_INVALID_INPUT (a client's 400) whose message matches `message`. */
function refuses(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isMmeError(err), `not an MmeError: ${String(err)}`);
    assert.equal(err.code, 'MME_ERR_INVALID_INPUT');
    assert.match(err.message, message);
    return true;
  });
}

/** One BYTES element as the wire has it: its length (u32 LE), then its bytes. */
const element = (bytes: Buffer) => Buffer.concat([Buffer.from([bytes.length, 0, 0, 0]), bytes]);

describe('oip/datatypes: OIP v2 datatypes and their raw layout', () => {
  it("maps the 13 v2 datatypes to onnxruntime's names and back; anything else is unknown, __proto__ too", () => {
    assert.deepEqual(V2_DATATYPES, [
      'BOOL',
      'UINT8',
      'UINT16',
      'UINT32',
      'UINT64',
      'INT8',
      'INT16',
      'INT32',
      'INT64',
      'FP16',
      'FP32',
      'FP64',
      'BYTES',
    ]);
    assert.equal(ortTypeOf('FP16'), 'float16');
    assert.equal(ortTypeOf('BYTES'), 'string');
    assert.equal(ortTypeOf('BOOL'), 'bool');
    for (const odd of ['fp32', '__proto__', 'constructor', 'toString', '', 7, null, undefined])
      assert.equal(ortTypeOf(odd), undefined, String(odd));
    for (const v2 of V2_DATATYPES) assert.equal(v2Datatype(ortTypeOf(v2)!), v2);
    assert.equal(v2Datatype('complex64'), 'complex64', 'an unknown type keeps its own name');
  });

  it('reads raw little-endian elements into an aligned array of their own', () => {
    // 1.5 and -2 as float32 LE, from a buffer at an odd offset (a slice of a bigger body).
    const body = Buffer.from([0xff, 0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0]);
    const fp32 = fromRaw('FP32', body.subarray(1), 2, 'input "x"');
    assert.ok(fp32 instanceof Float32Array);
    assert.deepEqual([...fp32], [1.5, -2]);
    body[2] = 0x11;
    assert.deepEqual([...fp32], [1.5, -2], 'a copy: the body changing later does not change it');
    const i64 = fromRaw('INT64', Buffer.from([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), 1, 'x');
    assert.deepEqual([...(i64 as BigInt64Array)], [-2n]);
    assert.deepEqual([...(fromRaw('BOOL', Buffer.from([1, 0, 1]), 3, 'x') as Uint8Array)], [1, 0, 1]);
    assert.deepEqual([...(fromRaw('FP16', Buffer.from([0x00, 0x3c]), 1, 'x') as Uint16Array)], [0x3c00]);
  });

  it('refuses raw data whose length is not what the shape needs, and a datatype it does not know', () => {
    refuses(
      () => fromRaw('FP32', Buffer.alloc(7), 2, 'input "x"'),
      /^input "x": 7 bytes of raw FP32 data, but its shape needs 2 elements of 4 bytes \(8\)$/,
    );
    refuses(() => fromRaw('INT64', Buffer.alloc(16), 1, 'x'), /16 bytes of raw INT64 data.*1 elements of 8 bytes/);
    refuses(() => fromRaw('__proto__', Buffer.alloc(4), 1, 'x'), /datatype "__proto__" is not one of BOOL, UINT8, /);
    refuses(() => fromRaw('Q'.repeat(1000), Buffer.alloc(4), 1, 'x'), /datatype "Q{100}"… \(1000 characters\)/);
  });

  it('reads raw BYTES as length-prefixed elements, as Buffers or as strings', () => {
    const raw = Buffer.concat([element(Buffer.from('héllo')), element(Buffer.alloc(0)), element(Buffer.from([0xff]))]);
    const buffers = fromRaw('BYTES', raw, 3, 'x') as Buffer[];
    assert.deepEqual(
      buffers.map((b) => [...b]),
      [[0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f], [], [0xff]],
    );
    assert.deepEqual(rawStrings(raw, 3, 'x'), ['héllo', '', '\ufffd']);
  });

  it('refuses raw BYTES that end inside a length or an element, or hold more or fewer elements than the shape', () => {
    const two = Buffer.concat([element(Buffer.from('a')), element(Buffer.from('b'))]);
    refuses(() => rawStrings(two, 1, 'input "s"'), /^input "s": the raw BYTES data holds more than the 1 elements/);
    refuses(() => rawStrings(two, 3, 'x'), /2 BYTES elements in the raw data, but its shape needs 3/);
    refuses(() => rawStrings(Buffer.from([1, 0]), 1, 'x'), /ends inside an element's 4-byte length/);
    refuses(() => fromRaw('BYTES', Buffer.from([9, 0, 0, 0, 1]), 1, 'x'), /says 9 bytes but the data ends first/);
    // A million empty elements against a shape of one: refused at the second, not read to the end.
    refuses(() => rawStrings(Buffer.alloc(4_000_000), 1, 'x'), /holds more than the 1 elements/);
    assert.deepEqual(rawStrings(Buffer.alloc(0), 0, 'x'), []);
  });

  it('writes elements as raw bytes: typed arrays as they lie in memory (a view, not the whole buffer), BYTES length-prefixed', () => {
    const whole = Float32Array.from([9, 1.5, -2, 9]);
    assert.deepEqual([...toRaw(whole.subarray(1, 3))], [0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0]);
    assert.deepEqual([...toRaw(['é', Buffer.from([7])])], [2, 0, 0, 0, 0xc3, 0xa9, 1, 0, 0, 0, 7]);
    assert.equal(toRaw([]).length, 0);
  });

  it('round-trips every fixed-size datatype through raw bytes, and BYTES through strings', () => {
    const fixed = V2_DATATYPES.filter((d) => d !== 'BYTES');
    fc.assert(
      fc.property(fc.constantFrom(...fixed), fc.uint8Array({ maxLength: 64 }), (datatype, seed) => {
        const width = (fromRaw(datatype, Buffer.alloc(0), 0, 'x') as NumericArray).BYTES_PER_ELEMENT;
        const bytes = Buffer.from(seed.subarray(0, seed.length - (seed.length % width)));
        assert.deepEqual(toRaw(fromRaw(datatype, bytes, bytes.length / width, 'x') as NumericArray), bytes);
      }),
    );
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 8 }), (strings) => {
        assert.deepEqual(rawStrings(toRaw(strings), strings.length, 'x'), strings);
      }),
    );
  });

  it('fills typed contents from numbers, booleans, and decimal strings or bigints for 64-bit integers', () => {
    assert.deepEqual([...toArray('INT8', [-128, 127], 'x')], [-128, 127]);
    assert.deepEqual([...toArray('BOOL', [true, false, 1], 'x')], [1, 0, 1]);
    assert.deepEqual([...toArray('FP32', [0.5, -1e-3], 'x')], [0.5, Math.fround(-1e-3)]);
    assert.deepEqual([...toArray('INT64', ['-9223372036854775808', 5, 6n], 'x')], [-(2n ** 63n), 5n, 6n]);
    assert.deepEqual([...toArray('UINT64', ['18446744073709551615'], 'x')], [2n ** 64n - 1n]);
  });

  it('refuses a typed element out of its datatype, or of another kind, naming it and its index', () => {
    refuses(() => toArray('INT8', [1, 300], 'input "x"'), /^input "x": element 1, 300, is not a INT8 value$/);
    refuses(() => toArray('UINT8', [-1], 'x'), /element 0, -1, is not a UINT8 value/);
    refuses(() => toArray('INT32', [1.5], 'x'), /element 0, 1\.5, is not a INT32 value/);
    refuses(() => toArray('FP32', ['1'], 'x'), /element 0, "1", is not a FP32 value/);
    refuses(() => toArray('INT64', [1.5], 'x'), /element 0, 1\.5, is not a INT64 value/);
    refuses(() => toArray('INT64', ['9223372036854775808'], 'x'), /is not a INT64 value/);
    refuses(() => toArray('UINT64', [-1n], 'x'), /element 0, -1, is not a UINT64 value/);
    // Past UINT64's 20 digits a string is refused before BigInt() reads it.
    refuses(() => toArray('INT64', [`1${'0'.repeat(5000)}`], 'x'), /element 0, "1{1}0{99}"… \(5001 characters\)/);
    refuses(() => toArray('FP32', [[1]], 'x'), /element 0, an array of 1, is not a FP32 value/);
    refuses(() => toArray('BYTES', ['a'], 'x'), /datatype "BYTES" has no typed contents; send it in raw contents/);
  });
});
