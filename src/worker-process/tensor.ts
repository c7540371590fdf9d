/**
 * The one tensor type every codec produces, and the only one batching accepts. `Tensor.build`, its
 * one maker, checks the type, the dims (non-negative safe integers, rank ≤ MAX_RANK) and the
 * request's budget before the data exists, then that the data is an array of the type's kind with
 * one element per element of `dims`: batching relies on it, since a tensor whose data and dims
 * disagree would shift every later request's rows in a merged batch into another caller's answer.
 */
import { errorOf } from '../errors';
import { ORT_ARRAYS as kCtors, type NumericArray } from '../oip/datatypes';

export type TensorData = NumericArray | string[];

/** The shape handlers build for context.run: any object of this form, or a Tensor. */
export interface PlainTensor {
  type: string;
  dims: number[];
  data: TensorData;
}

const TENSOR_TYPES: readonly string[] = [...kCtors.keys(), 'string'];

/** numpy's limit on dimensions (NPY_MAXDIMS); no ONNX model comes near it. */
export const MAX_RANK = 64;

export const invalidInput = errorOf('MME_ERR_INVALID_INPUT');

export function allocate(type: string, n: number): TensorData {
  if (type === 'string') return new Array<string>(n).fill('');
  const Ctor = kCtors.get(type);
  if (!Ctor) throw invalidInput(`tensor type ${type} is not supported; supported: ${TENSOR_TYPES.join(', ')}`);
  return new Ctor(n);
}

/** The element count of `dims`, each checked; refused as it grows past 2^53, so it is never inexact. */
export function countElements(dims: readonly unknown[], what: string): number {
  if (dims.length > MAX_RANK)
    throw invalidInput(`${what} has ${dims.length} dimensions; at most ${MAX_RANK} are supported`);
  let n = 1;
  for (const d of dims) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      throw invalidInput(
        `${what} has shape dimension ${typeof d === 'number' ? d : typeof d}; every dimension must be a non-negative integer`,
      );
    }
    n *= d;
    if (!Number.isSafeInteger(n)) throw invalidInput(`${what} declares more than 2^53 elements`);
  }
  return n;
}

/**
 * What one request may decode into, taken before any data is allocated: at most max_request_elements
 * over all its tensors, and no more elements than its body has bytes (each costs one in every codec).
 */
export class RequestBudget {
  #elements = 0;

  constructor(
    readonly maxElements: number,
    readonly bodyBytes: number,
  ) {}

  take(n: number, what: string): void {
    const total = this.#elements + n;
    if (total > this.maxElements) {
      throw invalidInput(
        `${what} has ${n} elements, and the request ${total} in all, over max_request_elements (${this.maxElements}); send fewer rows per request`,
      );
    }
    if (total > this.bodyBytes) {
      throw invalidInput(
        `${what} declares ${n} elements, more than the ${this.bodyBytes}-byte body can hold; check its shape`,
      );
    }
    this.#elements = total;
  }
}

export class Tensor implements PlainTensor {
  private constructor(
    readonly type: string,
    readonly dims: number[],
    readonly data: TensorData,
  ) {
    Object.freeze(dims);
  }

  /** `produce` makes the data for the checked count, once the budget has room for it. */
  static build(
    type: string,
    dims: readonly unknown[],
    budget: RequestBudget | null,
    what: string,
    produce: (count: number) => TensorData,
  ): Tensor {
    if (type !== 'string' && !kCtors.has(type))
      throw invalidInput(`${what} has tensor type ${type}; supported: ${TENSOR_TYPES.join(', ')}`);
    const n = countElements(dims, what);
    budget?.take(n, what);
    const data = produce(n);
    const Ctor = kCtors.get(type);
    const kindOk = Ctor ? data instanceof Ctor : Array.isArray(data);
    if (!kindOk || data.length !== n) {
      throw invalidInput(
        `${what} holds ${data.length} ${kindOk ? '' : `${data.constructor?.name ?? typeof data} `}elements, but a ${type} tensor of shape [${dims.join(', ')}] needs ${n}`,
      );
    }
    return new Tensor(type, [...(dims as number[])], data);
  }

  /** A tensor from elements already in their array (a session's output, a handler's feed): checked, not copied. */
  static of(t: PlainTensor, what = 'tensor'): Tensor {
    return t instanceof Tensor ? t : Tensor.build(t.type, t.dims, null, what, () => t.data);
  }

  /**
   * Fixed-size elements from exactly count × item size bytes, little-endian unless `bigEndian`;
   * viewed in place when aligned and little-endian (a frame's memory is never reused), else copied.
   * `typeName` is the type as the client named it, for the message.
   */
  static fromBytes(
    type: string,
    dims: readonly unknown[],
    bytes: Uint8Array,
    bigEndian: boolean,
    budget: RequestBudget,
    what: string,
    typeName = type,
  ): Tensor {
    const Ctor = kCtors.get(type);
    if (!Ctor) throw invalidInput(`tensor type ${type} has no fixed element size`);
    const size = Ctor.BYTES_PER_ELEMENT;
    return Tensor.build(type, dims, budget, what, (n) => {
      if (bytes.length !== n * size) {
        throw invalidInput(
          `${what} has ${bytes.length} bytes of ${typeName} data, but its shape [${dims.join(', ')}] needs ${n} elements of ${size} bytes (${n * size})`,
        );
      }
      if ((!bigEndian || size === 1) && bytes.byteOffset % size === 0)
        return new Ctor(bytes.buffer, bytes.byteOffset, n);
      const out = allocate(type, n) as NumericArray;
      const raw = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      raw.set(bytes);
      if (bigEndian && size > 1) for (let i = 0; i < raw.length; i += size) raw.subarray(i, i + size).reverse();
      return out;
    });
  }

  /** Tensors of one type and trailing dims, joined along axis 0; every offset is checked against the data it copies. */
  static concat(parts: readonly Tensor[]): Tensor {
    const first = parts[0];
    const trailing = first.dims.slice(1);
    const rowSize = trailing.reduce((a, b) => a * b, 1);
    let rows = 0;
    for (const p of parts) {
      if (!(p instanceof Tensor)) throw new TypeError('Tensor.concat takes Tensors only');
      if (
        p.type !== first.type ||
        p.dims.length !== first.dims.length ||
        p.dims.some((d, i) => i > 0 && d !== first.dims[i])
      ) {
        throw new TypeError(
          `Tensor.concat: ${p.type} [${p.dims.join(', ')}] does not join ${first.type} [${first.dims.join(', ')}] along axis 0`,
        );
      }
      rows += p.dims[0];
    }
    return Tensor.build(first.type, [rows, ...trailing], null, 'batch', (n) => {
      const data = allocate(first.type, n);
      let offset = 0;
      for (const p of parts) {
        const length = p.dims[0] * rowSize;
        if (p.data.length !== length)
          throw new TypeError(`Tensor.concat: a part holds ${p.data.length} elements for ${length}`);
        if (Array.isArray(data)) for (let i = 0; i < length; i++) data[offset + i] = (p.data as string[])[i];
        else data.set(p.data as never, offset);
        offset += length;
      }
      if (offset !== n) throw new TypeError(`Tensor.concat filled ${offset} of ${n} elements`);
      return data;
    });
  }

  /** Pieces of `rows[i]` rows along axis 0, which must add up to this tensor's rows; views for typed arrays. */
  split(rows: readonly number[]): Tensor[] {
    const total = rows.reduce((a, b) => a + b, 0);
    if (this.dims.length === 0 || total !== this.dims[0]) {
      throw new TypeError(
        `Tensor.split: ${rows.length} pieces of ${total} rows from a tensor of shape [${this.dims.join(', ')}]`,
      );
    }
    const rowSize = this.dims.slice(1).reduce((a, b) => a * b, 1);
    const out: Tensor[] = [];
    let start = 0;
    for (const r of rows) {
      const end = start + r * rowSize;
      const data = Array.isArray(this.data) ? this.data.slice(start, end) : this.data.subarray(start, end);
      out.push(Tensor.build(this.type, [r, ...this.dims.slice(1)], null, 'batch piece', () => data));
      start = end;
    }
    return out;
  }
}
