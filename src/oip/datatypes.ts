/**
 * Open Inference Protocol v2 tensor datatypes and their raw layout (binary extension, raw_*_contents):
 * flat, row-major, little-endian, unpadded; BOOL one byte; FP16 the IEEE half bits; BYTES each a u32
 * LE length then its bytes.
 */
import { errorOf, quote, quoteValue } from '../errors';

const invalid = errorOf('MME_ERR_INVALID_INPUT');

export type NumericArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;
type NumericCtor = {
  new (n: number): NumericArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): NumericArray;
  BYTES_PER_ELEMENT: number;
};

/**
 * Each datatype's onnxruntime type, the element array of a fixed-size one as onnxruntime takes it
 * (BOOL as 0/1 bytes, FP16 as its bits) and its field of KServe's InferTensorContents (FP16 has
 * none: it travels raw only). A Map: datatypes are client text, and "__proto__" must find nothing.
 */
type Datatype = { ort: string; array?: NumericCtor; contents?: string };
const kDatatypes: ReadonlyMap<string, Datatype> = new Map<string, Datatype>([
  ['BOOL', { ort: 'bool', array: Uint8Array, contents: 'bool_contents' }],
  ['UINT8', { ort: 'uint8', array: Uint8Array, contents: 'uint_contents' }],
  ['UINT16', { ort: 'uint16', array: Uint16Array, contents: 'uint_contents' }],
  ['UINT32', { ort: 'uint32', array: Uint32Array, contents: 'uint_contents' }],
  ['UINT64', { ort: 'uint64', array: BigUint64Array, contents: 'uint64_contents' }],
  ['INT8', { ort: 'int8', array: Int8Array, contents: 'int_contents' }],
  ['INT16', { ort: 'int16', array: Int16Array, contents: 'int_contents' }],
  ['INT32', { ort: 'int32', array: Int32Array, contents: 'int_contents' }],
  ['INT64', { ort: 'int64', array: BigInt64Array, contents: 'int64_contents' }],
  ['FP16', { ort: 'float16', array: Uint16Array }],
  ['FP32', { ort: 'float32', array: Float32Array, contents: 'fp32_contents' }],
  ['FP64', { ort: 'float64', array: Float64Array, contents: 'fp64_contents' }],
  ['BYTES', { ort: 'string', contents: 'bytes_contents' }],
]);
const kOrtToV2: ReadonlyMap<string, string> = new Map([...kDatatypes].map(([v2, d]) => [d.ort, v2]));
/** The element array of each fixed-size onnxruntime type (bool as 0/1 bytes, float16 as its bits). */
export const ORT_ARRAYS: ReadonlyMap<string, NumericCtor> = new Map(
  [...kDatatypes.values()].flatMap((d) => (d.array ? [[d.ort, d.array] as const] : [])),
);

export const V2_DATATYPES: readonly string[] = [...kDatatypes.keys()];

export function ortTypeOf(datatype: unknown): string | undefined {
  return typeof datatype === 'string' ? kDatatypes.get(datatype)?.ort : undefined;
}

/** Unknown types keep their own name. */
export function v2Datatype(ortType: string): string {
  return kOrtToV2.get(ortType) ?? ortType;
}

/** The InferTensorContents field that holds `datatype`'s elements, if it has one. */
export function contentsField(datatype: string): string | undefined {
  return kDatatypes.get(datatype)?.contents;
}

/** Raw elements: a typed array for fixed-size datatypes, one Buffer per element for BYTES. */
export type RawElements = NumericArray | Buffer[];

/** Reads `count` elements of `datatype` from raw bytes (copied, so the array is aligned and owns its memory). */
export function fromRaw(datatype: string, bytes: Buffer, count: number, what: string): RawElements {
  if (datatype === 'BYTES') {
    const out: Buffer[] = [];
    walkBytesElements(bytes, count, what, (start, end) => out.push(bytes.subarray(start, end)));
    return out;
  }
  const Ctor = kDatatypes.get(datatype)?.array;
  if (!Ctor) throw invalid(`${what}: datatype ${quote(datatype)} is not one of ${V2_DATATYPES.join(', ')}`);
  if (bytes.length !== count * Ctor.BYTES_PER_ELEMENT) {
    throw invalid(
      `${what}: ${bytes.length} bytes of raw ${datatype} data, but its shape needs ${count} elements of ${Ctor.BYTES_PER_ELEMENT} bytes (${count * Ctor.BYTES_PER_ELEMENT})`,
    );
  }
  const out = new Ctor(count);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

/** Raw BYTES elements as UTF-8 strings, decoded straight from the body: no Buffer object per element. */
export function rawStrings(bytes: Buffer, count: number, what: string): string[] {
  const out: string[] = [];
  walkBytesElements(bytes, count, what, (start, end) => out.push(bytes.toString('utf8', start, end)));
  return out;
}

/**
 * Calls `take` with the bounds of each length-prefixed element. It stops at `count`: a body of
 * empty elements cannot make more work than its shape declares.
 */
function walkBytesElements(
  bytes: Buffer,
  count: number,
  what: string,
  take: (start: number, end: number) => void,
): void {
  let offset = 0;
  let n = 0;
  while (offset < bytes.length) {
    if (n === count) throw invalid(`${what}: the raw BYTES data holds more than the ${count} elements its shape needs`);
    if (offset + 4 > bytes.length) throw invalid(`${what}: raw BYTES data ends inside an element's 4-byte length`);
    const length = bytes.readUInt32LE(offset);
    if (offset + 4 + length > bytes.length)
      throw invalid(`${what}: a raw BYTES element says ${length} bytes but the data ends first`);
    take(offset + 4, offset + 4 + length);
    offset += 4 + length;
    n++;
  }
  if (n !== count) throw invalid(`${what}: ${n} BYTES elements in the raw data, but its shape needs ${count}`);
}

/** The raw bytes of elements already held in their datatype's array (or, for BYTES, as strings or Buffers). */
export function toRaw(data: NumericArray | ReadonlyArray<string | Buffer>): Buffer {
  if (!Array.isArray(data)) {
    const typed = data as NumericArray;
    return Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
  }
  const items = (data as ReadonlyArray<string | Buffer>).map((s) => (Buffer.isBuffer(s) ? s : Buffer.from(s, 'utf8')));
  const out = Buffer.allocUnsafe(items.reduce((n, b) => n + 4 + b.length, 0));
  let offset = 0;
  for (const b of items) {
    out.writeUInt32LE(b.length, offset);
    offset += 4 + b.copy(out, offset + 4);
  }
  return out;
}

/** A 64-bit element: a bigint, an integral number, or a decimal string no longer than UINT64's 20 digits (BigInt() of a longer one costs more). */
function bigElement(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return typeof v === 'string' && /^-?\d{1,20}$/.test(v) ? BigInt(v) : undefined;
}

/** A new array of `datatype` filled from plain values (numbers, decimal strings or bigints for 64-bit integers, booleans). */
export function toArray(datatype: string, values: ArrayLike<unknown>, what: string): NumericArray {
  const Ctor = kDatatypes.get(datatype)?.array;
  if (!Ctor) throw invalid(`${what}: datatype ${quote(datatype)} has no typed contents; send it in raw contents`);
  const out = new Ctor(values.length);
  const big = out instanceof BigInt64Array || out instanceof BigUint64Array;
  const integral = big || !(out instanceof Float32Array || out instanceof Float64Array);
  const slots = out as unknown as unknown[];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const element = big ? bigElement(v) : typeof v === 'boolean' ? Number(v) : typeof v === 'number' ? v : undefined;
    if (element !== undefined) slots[i] = element;
    // An integer array wraps or truncates what does not fit: an element that reads back changed was out of range.
    if (element === undefined || (integral && slots[i] !== element))
      throw invalid(`${what}: element ${i}, ${quoteValue(v)}, is not a ${datatype} value`);
  }
  return out;
}
