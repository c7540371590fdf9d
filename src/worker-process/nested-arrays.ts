/**
 * Nested JSON arrays ⇄ the flat data of a Tensor: the shape of a nested array (checked
 * rectangular), filling typed arrays with the checks JSON values get, and nesting flat values back.
 * The depth of every walk is bounded by MAX_RANK, never by the client's nesting.
 */
import { type MmeError, quoteValue } from '../errors';
import { fromHalf, toHalf } from './float16';
import { allocate, invalidInput, MAX_RANK, Tensor, type PlainTensor, type TensorData } from './tensor';

/** Shape of a nested array, checked to be rectangular. */
export function shapeOf(value: unknown, what: string): number[] {
  const dims: number[] = [];
  let v = value;
  while (Array.isArray(v)) {
    if (dims.length === MAX_RANK)
      throw invalidInput(`${what} is nested deeper than ${MAX_RANK} levels; no tensor has that many dimensions`);
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
  return invalidInput(`${what} is not a rectangular array: every row at the same depth must have the same length`);
}

/** Fills a flat typed array of `type` from a (rectangular) nested array or a flat list. */
export function fromNested(type: string, value: unknown, dims: readonly number[], what: string): TensorData {
  const n = dims.reduce((a, b) => a * b, 1);
  const out = allocate(type, n);
  if ((type === 'float32' || type === 'float64') && dims.length > 0) {
    // The common case (an image is 150 528 floats) written straight into the typed array: no
    // flattened copy, no converter call per element.
    if (fillFloats(out as Float32Array | Float64Array, value, dims.length - 1, 0, type, what) !== n) throw ragged(what);
    return out;
  }
  const flat: unknown[] =
    dims.length <= 1
      ? dims.length === 0
        ? [value]
        : (value as unknown[])
      : (value as unknown[]).flat(dims.length - 1);
  if (flat.length !== n) throw ragged(what);
  const convert = converter(type, what);
  for (let i = 0; i < n; i++) (out as unknown[])[i] = convert(flat[i]);
  return out;
}

/** Writes the numbers of a nested array (`depth` levels above the innermost) from `at`; returns where it stopped. */
function fillFloats(
  out: Float32Array | Float64Array,
  v: unknown,
  depth: number,
  at: number,
  type: string,
  what: string,
): number {
  if (!Array.isArray(v)) throw ragged(what);
  if (depth > 0) {
    for (let i = 0; i < v.length; i++) at = fillFloats(out, v[i], depth - 1, at, type, what);
    return at;
  }
  if (at + v.length > out.length) throw ragged(what);
  for (let i = 0; i < v.length; i++) {
    const x: unknown = v[i];
    if (typeof x !== 'number') throw badElement(x, 'numbers', type, what);
    out[at + i] = x;
  }
  return at + v.length;
}

function badElement(v: unknown, expected: string, type: string, what: string): MmeError {
  return invalidInput(`${what} has element ${quoteValue(v)}, but the model expects ${expected} (tensor type ${type})`);
}

function converter(type: string, what: string): (v: unknown) => unknown {
  const bad = (v: unknown, expected: string) => badElement(v, expected, type, what);
  switch (type) {
    case 'string':
      return (v) => {
        if (typeof v !== 'string') throw bad(v, 'strings');
        return v;
      };
    case 'bool':
      return (v) => {
        if (typeof v === 'boolean') return v ? 1 : 0;
        if (v === 0 || v === 1) return v;
        throw bad(v, 'true/false');
      };
    case 'int64':
    case 'uint64':
      return (v) => {
        if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
        if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
        throw bad(v, 'integers');
      };
    case 'float16':
    case 'float32':
    case 'float64':
      return (v) => {
        if (typeof v !== 'number') throw bad(v, 'numbers');
        return type === 'float16' ? toHalf(v) : v;
      };
    default:
      return (v) => {
        if (typeof v !== 'number' || !Number.isInteger(v)) throw bad(v, 'integers');
        return v;
      };
  }
}

/**
 * The tensor as `type`, converted element by element with the checks JSON values get (an integer
 * input refuses 1.5); the same tensor when it already has that type.
 */
export function castTo(t: Tensor, type: string, what: string): Tensor {
  if (t.type === type) return t;
  return Tensor.build(type, t.dims, null, what, () => fromNested(type, jsonElements(t), [t.data.length], what));
}

/** JSON-safe element values: bigint → number when exact, else a decimal string; float16 bits → number. */
export function jsonElements(t: PlainTensor): unknown[] {
  const d = t.data;
  if (t.type === 'float16') return Array.from(d as Uint16Array, fromHalf);
  if (t.type === 'bool') return Array.from(d as Uint8Array, (x) => x !== 0);
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) {
    return Array.from(d as ArrayLike<bigint>, (x) =>
      x <= BigInt(Number.MAX_SAFE_INTEGER) && x >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(x) : x.toString(),
    );
  }
  return Array.from(d as ArrayLike<unknown>);
}

/** Flat values → nested arrays with `dims`. Group counts come from dims, so a 0 dimension nests as []. */
export function nest(flat: unknown[], dims: readonly number[]): unknown {
  if (dims.length === 0) return flat[0];
  let level: unknown[] = flat;
  for (let axis = dims.length - 1; axis >= 1; axis--) {
    const size = dims[axis];
    let groups = 1;
    for (let a = 0; a < axis; a++) groups *= dims[a];
    const next: unknown[] = new Array(groups);
    for (let i = 0; i < groups; i++) next[i] = level.slice(i * size, (i + 1) * size);
    level = next;
  }
  return level;
}
