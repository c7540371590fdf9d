/**
 * Open Inference Protocol v2 tensor datatypes: their names against onnxruntime's tensor types, and
 * the raw layout that the binary tensor extension (REST) and raw_input_contents /
 * raw_output_contents (gRPC) carry: elements flat, row-major, little-endian, with no padding;
 * BOOL one byte each; FP16 the IEEE half bits; BYTES each element as a u32 LE length then its
 * bytes. Used by both processes: the server converts gRPC's typed contents, the worker decodes
 * tensors.
 */
import { MmeError } from '../errors';

/** OIP datatype → onnxruntime-node tensor type. */
export const V2_TO_ORT: Readonly<Record<string, string>> = {
  BOOL: 'bool', UINT8: 'uint8', UINT16: 'uint16', UINT32: 'uint32', UINT64: 'uint64',
  INT8: 'int8', INT16: 'int16', INT32: 'int32', INT64: 'int64',
  FP16: 'float16', FP32: 'float32', FP64: 'float64', BYTES: 'string',
};
const kOrtToV2: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(V2_TO_ORT).map(([k, v]) => [v, k]));

/** The OIP datatype of an onnxruntime type; unknown types keep their own name. */
export function v2Datatype(ortType: string): string {
  return kOrtToV2[ortType] ?? ortType;
}

export type NumericArray =
  | Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array
  | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;
type NumericCtor = { new (n: number): NumericArray; BYTES_PER_ELEMENT: number };

/** The element array of each fixed-size datatype (BOOL as 0/1 bytes, FP16 as its bits), as onnxruntime takes it. */
const kArrays: Readonly<Record<string, NumericCtor>> = {
  BOOL: Uint8Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array, UINT64: BigUint64Array,
  INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, INT64: BigInt64Array,
  FP16: Uint16Array, FP32: Float32Array, FP64: Float64Array,
};

/** Raw elements: a typed array for fixed-size datatypes, one Buffer per element for BYTES. */
export type RawElements = NumericArray | Buffer[];

function invalid(message: string): MmeError {
  return new MmeError('MME_ERR_INVALID_INPUT', message);
}

/** Reads `count` elements of `datatype` from raw bytes (copied, so the array is aligned and owns its memory). */
export function fromRaw(datatype: string, bytes: Buffer, count: number, what: string): RawElements {
  if (datatype === 'BYTES') return readBytesElements(bytes, count, what);
  const Ctor = kArrays[datatype];
  if (!Ctor) throw invalid(`${what}: datatype ${datatype} is not one of ${Object.keys(V2_TO_ORT).join(', ')}`);
  if (bytes.length !== count * Ctor.BYTES_PER_ELEMENT) {
    throw invalid(`${what}: ${bytes.length} bytes of raw ${datatype} data, but its shape needs ${count} elements of ${Ctor.BYTES_PER_ELEMENT} bytes (${count * Ctor.BYTES_PER_ELEMENT})`);
  }
  const out = new Ctor(count);
  new Uint8Array(out.buffer).set(bytes);
  return out;
}

function readBytesElements(bytes: Buffer, count: number, what: string): Buffer[] {
  const out: Buffer[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (offset + 4 > bytes.length) throw invalid(`${what}: raw BYTES data ends inside an element's 4-byte length`);
    const n = bytes.readUInt32LE(offset);
    if (offset + 4 + n > bytes.length) throw invalid(`${what}: a raw BYTES element says ${n} bytes but the data ends first`);
    out.push(bytes.subarray(offset + 4, offset + 4 + n));
    offset += 4 + n;
  }
  if (out.length !== count) throw invalid(`${what}: ${out.length} BYTES elements in the raw data, but its shape needs ${count}`);
  return out;
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

/** A new array of `datatype` filled from plain values (numbers, decimal strings or bigints for 64-bit integers, booleans). */
export function toArray(datatype: string, values: ArrayLike<unknown>, what: string): NumericArray {
  const Ctor = kArrays[datatype];
  if (!Ctor) throw invalid(`${what}: datatype ${datatype} has no typed contents; send it in raw contents`);
  const out = new Ctor(values.length);
  const big = out instanceof BigInt64Array || out instanceof BigUint64Array;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    (out as unknown as unknown[])[i] = big ? BigInt(v as string | number | bigint) : typeof v === 'boolean' ? Number(v) : v;
  }
  return out;
}
