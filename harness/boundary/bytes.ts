/** The bytes of boundary cases: .npy files (valid and broken), JSON and CSV bodies, and the known answer of a valid case. */
import { type BodyCodec, type JsonShape, type NpyLayout, type ValidCase, kColumns, kInput } from './cases';
import { f32 } from '../float32';

export const flat = (r: readonly number[][]) => r.flat();
export const rowsOf = (n: number) =>
  Array.from({ length: n }, (_, i) => Array.from({ length: kColumns }, (_, j) => i + j / 8));
export const oneRow = rowsOf(1);

export const kEmpty = Buffer.alloc(0);
const kNpyMagic = Buffer.from('\x93NUMPY', 'latin1');

/** A .npy file: `dict` padded so the data starts 64-byte aligned, as np.save writes it. */
export function npyFile(dict: string, data: Buffer, major = 1): Buffer {
  const prefix = major === 1 ? 10 : 12;
  const total = Math.ceil((prefix + dict.length + 1) / 64) * 64;
  const head = Buffer.alloc(total, 0x20);
  kNpyMagic.copy(head);
  head[6] = major;
  head[7] = 0;
  if (major === 1) head.writeUInt16LE(total - prefix, 8);
  else head.writeUInt32LE(total - prefix, 8);
  head.write(dict, prefix, major === 3 ? 'utf8' : 'latin1');
  head[total - 1] = 0x0a;
  return Buffer.concat([head, data]);
}

/** The header dict np.save writes; `shape` as Python spells it, e.g. '(2, 3)' or '(1,)'. */
export const npyDict = (descr: string, shape: string, fortran = false) =>
  `{'descr': '${descr}', 'fortran_order': ${fortran ? 'True' : 'False'}, 'shape': ${shape}, }`;

/** A .npy body whose descr, shape (Python's spelling without the parentheses) and data need not agree. */
export const npyBody = (descr: string, shape: string, data: Buffer) => npyFile(npyDict(descr, `(${shape})`), data);

/** The rows as a .npy body, in one of the layouts NumPy writes (all cast or reordered back to these float32 values). */
function npyRows(r: number[][], layout: NpyLayout): Buffer {
  const shape = `(${r.length}, ${kColumns})`;
  const values = flat(r);
  switch (layout) {
    case '<f4':
      return npyFile(npyDict('<f4', shape), f32(values));
    case 'v2':
      return npyFile(npyDict('<f4', shape), f32(values), 2);
    case 'v3':
      return npyFile(npyDict('<f4', shape), f32(values), 3);
    case '>f4': {
      const b = f32(values);
      b.swap32();
      return npyFile(npyDict('>f4', shape), b);
    }
    case '<f8':
      return npyFile(npyDict('<f8', shape), Buffer.from(Float64Array.from(values).buffer));
    case '<i4':
      return npyFile(npyDict('<i4', shape), Buffer.from(Int32Array.from(values, Math.trunc).buffer));
    case 'fortran': {
      const columnMajor: number[] = [];
      for (let c = 0; c < kColumns; c++) for (const row of r) columnMajor.push(row[c]);
      return npyFile(npyDict('<f4', shape, true), f32(columnMajor));
    }
  }
}

/** The rows a valid case really sends (an integer .npy truncates them). */
export function sentRows(c: ValidCase): number[][] {
  return c.via === 'http' && c.codec === 'npy' && c.npy === '<i4' ? c.rows.map((r) => r.map(Math.trunc)) : c.rows;
}

/** The answer a valid case must get: each value + 1, in float32. */
export function knownAnswer(c: ValidCase): number[][] {
  return sentRows(c).map((r) => r.map((v) => Math.fround(Math.fround(v) + 1)));
}

export function v2Tensor(r: number[][], nested = false): Record<string, unknown> {
  return { name: kInput, shape: [r.length, kColumns], datatype: 'FP32', data: nested ? r : flat(r) };
}

export function jsonBody(shape: JsonShape, r: unknown): string {
  switch (shape) {
    case 'named':
      return JSON.stringify({ inputs: { [kInput]: r } });
    case 'instances':
      return JSON.stringify({ instances: r });
    case 'v2':
      return JSON.stringify({
        inputs: [
          { name: kInput, shape: Array.isArray(r) ? [r.length, kColumns] : [1, kColumns], datatype: 'FP32', data: r },
        ],
      });
    case 'bare':
      return JSON.stringify(r);
  }
}

export const kMediaType: Record<BodyCodec, string> = {
  named: 'application/json',
  instances: 'application/json',
  v2: 'application/json',
  bare: 'application/json',
  csv: 'text/csv',
  npy: 'application/x-npy',
};
export const OIP_TYPE = 'application/vnd.sagemaker-triton.binary+json';

/** The body of a valid request in `codec`. */
export function codecBody(codec: BodyCodec, r: number[][], npy: NpyLayout = '<f4'): Buffer {
  if (codec === 'csv') return Buffer.from(`${r.map((row) => row.join(',')).join('\n')}\n`);
  if (codec === 'npy') return npyRows(r, npy);
  return Buffer.from(jsonBody(codec, r));
}

/** Broken .npy files; the index is the case's `variant`. */
export const kBrokenNpy: ReadonlyArray<() => Buffer> = [
  () => Buffer.from('\x93NUMPZ\x01\x00', 'latin1'),
  () => Buffer.from('\x93NUMPY', 'latin1'),
  () => {
    const b = npyFile(npyDict('<f4', '(1, 16)'), f32(flat(oneRow)));
    b[6] = 9;
    return b;
  },
  () => {
    const b = npyFile(npyDict('<f4', '(1, 16)'), f32(flat(oneRow)));
    b.writeUInt16LE(0xffff, 8);
    return b;
  },
  () => {
    const b = npyFile(npyDict('<f4', '(1, 16)'), f32(flat(oneRow)), 2);
    b.writeUInt32LE(0xffffffff, 8);
    return b;
  },
  () => npyFile("{'descr': '<f4', 'shape': (1, 16), }", f32(flat(oneRow))),
  () => npyFile(npyDict('|O', '(1, 16)'), Buffer.alloc(128)),
  () => npyFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 16), }", f32(flat(oneRow))),
  () => npyFile(npyDict('<f4', '(-1, 16)'), f32(flat(oneRow))),
  () => npyFile(npyDict('<f4', '(1 16)'), f32(flat(oneRow))),
  () => npyFile(npyDict('<c8', '(1, 16)'), Buffer.alloc(128)),
  () => npyFile(npyDict('<f4', '(1, 16)'), f32(flat(oneRow)).subarray(0, 63)),
  () => npyFile(npyDict('<f4', '(1, 16)'), Buffer.concat([f32(flat(oneRow)), Buffer.alloc(1)])),
  () => npyFile(npyDict('<f3', '(1, 16)'), Buffer.alloc(48)),
  () => npyFile(npyDict('<U', '(1, 16)'), Buffer.alloc(0)),
  () => npyFile(npyDict('<U99999999999', '(1,)'), Buffer.alloc(0)),
];

/** '[' × depth, a number, then the closers: built as one string, never by recursion. */
export function deep(depth: number, open: '[' | '{"a":' = '['): string {
  return `${open.repeat(depth)}1${(open === '[' ? ']' : '}').repeat(depth)}`;
}
