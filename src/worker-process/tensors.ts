/**
 * Plain tensors (type, dims, flat data) and the conversions the default handler needs: nested JSON
 * arrays ⇄ flat typed arrays, and concatenation / splitting along the batch axis.
 */
import { MmeError } from '../errors';

export type TensorData =
  | Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array
  | Int32Array | Uint32Array | BigInt64Array | BigUint64Array | string[];

export interface PlainTensor {
  type: string;
  dims: number[];
  data: TensorData;
}

type NumericCtor = { new (n: number): Exclude<TensorData, string[]>; BYTES_PER_ELEMENT: number };

const kCtors: Record<string, NumericCtor> = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array, float16: Uint16Array,
};

export const SUPPORTED_TYPES = [...Object.keys(kCtors), 'string'];

export function allocate(type: string, n: number): TensorData {
  if (type === 'string') return new Array<string>(n).fill('');
  const Ctor = kCtors[type];
  if (!Ctor) throw new MmeError('MME_ERR_INVALID_INPUT', `tensor type ${type} is not supported; supported: ${SUPPORTED_TYPES.join(', ')}`);
  return new Ctor(n);
}

export function elementCount(dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

/** Shape of a nested array, checked to be rectangular. */
export function shapeOf(value: unknown, what: string): number[] {
  const dims: number[] = [];
  let v = value;
  while (Array.isArray(v)) {
    dims.push(v.length);
    if (v.length === 0) break;
    v = v[0];
  }
  checkRectangular(value, dims, 0, what);
  return dims;
}

function checkRectangular(v: unknown, dims: number[], depth: number, what: string): void {
  if (depth === dims.length) {
    if (Array.isArray(v)) throw ragged(what);
    return;
  }
  if (!Array.isArray(v) || v.length !== dims[depth]) throw ragged(what);
  if (depth + 1 < dims.length) for (const item of v) checkRectangular(item, dims, depth + 1, what);
  else for (const item of v) if (Array.isArray(item)) throw ragged(what);
}

function ragged(what: string): MmeError {
  return new MmeError('MME_ERR_INVALID_INPUT', `${what} is not a rectangular array: every row at the same depth must have the same length`);
}

/** Fills a flat typed array of `type` from a (rectangular) nested array or a flat list. */
export function fromNested(type: string, value: unknown, dims: number[], what: string): TensorData {
  const n = elementCount(dims);
  const out = allocate(type, n);
  if ((type === 'float32' || type === 'float64') && dims.length > 0) {
    // The common case (an image is 150 528 floats) written straight into the typed array: no
    // flattened copy, no converter call per element.
    if (fillFloats(out as Float32Array | Float64Array, value, dims.length - 1, 0, type, what) !== n) throw ragged(what);
    return out;
  }
  const flat: unknown[] = dims.length <= 1 ? (dims.length === 0 ? [value] : (value as unknown[])) : (value as unknown[]).flat(dims.length - 1);
  if (flat.length !== n) throw ragged(what);
  const convert = converter(type, what);
  for (let i = 0; i < n; i++) (out as unknown[])[i] = convert(flat[i]);
  return out;
}

/** Writes the numbers of a nested array (`depth` levels above the innermost) from `at`; returns where it stopped. */
function fillFloats(out: Float32Array | Float64Array, v: unknown, depth: number, at: number, type: string, what: string): number {
  if (!Array.isArray(v)) throw ragged(what);
  if (depth > 0) {
    for (let i = 0; i < v.length; i++) at = fillFloats(out, v[i], depth - 1, at, type, what);
    return at;
  }
  if (at + v.length > out.length) throw ragged(what);
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== 'number') throw notNumber(x, type, what);
    out[at + i] = x;
  }
  return at + v.length;
}

function notNumber(v: unknown, type: string, what: string): MmeError {
  return new MmeError('MME_ERR_INVALID_INPUT', `${what} has element ${JSON.stringify(v)}, but the model expects numbers (tensor type ${type})`);
}

function converter(type: string, what: string): (v: unknown) => unknown {
  const bad = (v: unknown, expected: string) =>
    new MmeError('MME_ERR_INVALID_INPUT', `${what} has element ${JSON.stringify(v)}, but the model expects ${expected} (tensor type ${type})`);
  switch (type) {
    case 'string':
      return (v) => { if (typeof v !== 'string') throw bad(v, 'strings'); return v; };
    case 'bool':
      return (v) => { if (typeof v === 'boolean') return v ? 1 : 0; if (v === 0 || v === 1) return v; throw bad(v, 'true/false'); };
    case 'int64': case 'uint64':
      return (v) => {
        if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
        if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
        throw bad(v, 'integers');
      };
    case 'float16':
      return (v) => { if (typeof v !== 'number') throw bad(v, 'numbers'); return toHalf(v); };
    case 'float32': case 'float64':
      return (v) => { if (typeof v !== 'number') throw notNumber(v, type, what); return v; };
    default:
      return (v) => { if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(v, 'integers'); return v; };
  }
}

/**
 * The tensor as `type`, converted element by element with the checks JSON values get (an integer
 * input refuses 1.5); the same tensor when it already has that type.
 */
export function castTo(t: PlainTensor, type: string, what: string): PlainTensor {
  if (t.type === type) return t;
  return { type, dims: t.dims, data: fromNested(type, jsonElements(t), [t.data.length], what) };
}

/** JSON-safe element values: bigint → number when exact, else a decimal string; float16 bits → number. */
export function jsonElements(t: PlainTensor): unknown[] {
  const d = t.data;
  if (t.type === 'float16') return Array.from(d as Uint16Array, fromHalf);
  if (t.type === 'bool') return Array.from(d as Uint8Array, (x) => x !== 0);
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) {
    return Array.from(d as ArrayLike<bigint>, (x) => (x <= BigInt(Number.MAX_SAFE_INTEGER) && x >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(x) : x.toString()));
  }
  return Array.from(d as ArrayLike<unknown>);
}

/** Flat values → nested arrays with `dims`. */
export function nest(flat: unknown[], dims: readonly number[]): unknown {
  if (dims.length === 0) return flat[0];
  if (dims.length === 1) return flat;
  let level: unknown[] = flat;
  for (let axis = dims.length - 1; axis >= 1; axis--) {
    const size = dims[axis];
    const next: unknown[] = new Array(level.length / size);
    for (let i = 0; i < next.length; i++) next[i] = level.slice(i * size, (i + 1) * size);
    level = next;
  }
  return level;
}

/** Concatenates tensors of the same type and trailing dims along axis 0. */
export function concat(parts: PlainTensor[]): PlainTensor {
  const first = parts[0];
  const rows = parts.reduce((s, p) => s + p.dims[0], 0);
  const dims = [rows, ...first.dims.slice(1)];
  const data = allocate(first.type, elementCount(dims));
  let offset = 0;
  for (const p of parts) {
    if (Array.isArray(data)) for (let i = 0; i < p.data.length; i++) data[offset + i] = (p.data as string[])[i];
    else (data as Exclude<TensorData, string[]>).set(p.data as never, offset);
    offset += p.data.length;
  }
  return { type: first.type, dims, data };
}

/** Splits along axis 0 into pieces of `rows[i]` rows; views, not copies, for typed arrays. */
export function split(t: PlainTensor, rows: number[]): PlainTensor[] {
  const rowSize = t.dims[0] === 0 ? 0 : t.data.length / t.dims[0];
  const out: PlainTensor[] = [];
  let start = 0;
  for (const r of rows) {
    const end = start + r * rowSize;
    const data = Array.isArray(t.data) ? t.data.slice(start, end) : (t.data as Exclude<TensorData, string[]>).subarray(start, end);
    out.push({ type: t.type, dims: [r, ...t.dims.slice(1)], data: data as TensorData });
    start = end;
  }
  return out;
}

/** IEEE 754 half precision from a JS number (round to nearest even). */
export function toHalf(value: number): number {
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  f32[0] = value;
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++;
  return sign | half;
}

export function fromHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
