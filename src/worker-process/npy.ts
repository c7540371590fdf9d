/**
 * NumPy's .npy format (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html), as
 * the SageMaker SDK's NumpySerializer / NumpyDeserializer exchange it (np.save / np.load):
 *
 *   "\x93NUMPY" u8 major u8 minor, header length (u16 LE in 1.0, u32 LE in 2.0 and 3.0),
 *   a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 *   spaces and "\n" so the data starts 64-byte aligned, then the raw elements.
 *
 * Written here rather than taken from npm: npyjs, the maintained parser, neither reorders
 * Fortran-ordered data nor swaps big-endian data nor checks the data length against the shape, and
 * it pulls in a fetch polyfill. Object (pickled) arrays are refused, as np.load(allow_pickle=False) does.
 */
import { MmeError, quote } from '../errors';
import type { NumericArray } from '../oip/datatypes';
import { allocate, invalidInput, RequestBudget, Tensor, type PlainTensor } from './tensor';

const kMagic = Buffer.from('\x93NUMPY', 'latin1');
const kAlign = 64;
/** np.save leaves room in the header for the first axis to grow to this many digits. */
const kGrowthAxisDigits = 21;

/** descr type code (without byte order) → onnxruntime tensor type. */
const kTypeByCode: ReadonlyMap<string, string> = new Map([
  ['b1', 'bool'],
  ['i1', 'int8'],
  ['u1', 'uint8'],
  ['i2', 'int16'],
  ['u2', 'uint16'],
  ['i4', 'int32'],
  ['u4', 'uint32'],
  ['i8', 'int64'],
  ['u8', 'uint64'],
  ['f2', 'float16'],
  ['f4', 'float32'],
  ['f8', 'float64'],
]);
const kCodeByType: ReadonlyMap<string, string> = new Map([...kTypeByCode].map(([code, type]) => [type, code]));
const kMaxCodePoint = 0x10ffff;

const invalid = (message: string) => invalidInput(`the application/x-npy body ${message}`);

interface Header {
  descr: string;
  fortranOrder: boolean;
  shape: number[];
  dataOffset: number;
}

export function parseNpy(buf: Buffer, budget: RequestBudget): Tensor {
  const header = readHeader(buf);
  const { byteOrder, code, width } = splitDescr(header.descr);
  const bigEndian = byteOrder === '>';
  const what = 'the application/x-npy body';
  const bytes = buf.subarray(header.dataOffset);
  let t: Tensor;
  if (code === 'U') {
    // U0 holds nothing per element: any shape would pass a length check, so it is refused.
    if (width === 0) throw invalid(`has dtype '${header.descr}', a string of no characters; use U1 or wider`);
    t = Tensor.build('string', header.shape, budget, what, (n) => {
      if (bytes.length !== n * 4 * width)
        throw invalid(
          `has ${bytes.length} bytes of '${header.descr}' data, but its shape [${header.shape.join(', ')}] needs ${n} elements of ${4 * width} bytes (${n * 4 * width})`,
        );
      return readStrings(bytes, width, bigEndian);
    });
  } else {
    const type = kTypeByCode.get(`${code}${width}`);
    if (!type)
      throw invalid(
        `has dtype '${header.descr}'; supported: ${[...kTypeByCode.keys()].join(', ')} and U<n> (unicode strings)`,
      );
    t = Tensor.fromBytes(type, header.shape, bytes, bigEndian, budget, what, `'${header.descr}'`);
  }
  return header.fortranOrder ? toCOrder(t) : t;
}

function readHeader(buf: Buffer): Header {
  if (buf.length < 10 || !buf.subarray(0, 6).equals(kMagic))
    throw invalid('does not start with the .npy magic "\\x93NUMPY"');
  const major = buf[6];
  if (major < 1 || major > 3)
    throw invalid(`is .npy format version ${major}.${buf[7]}; versions 1.0 to 3.0 are supported`);
  const prefix = major === 1 ? 10 : 12;
  if (buf.length < prefix) throw invalid('is truncated inside its header');
  const length = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  if (buf.length < prefix + length) throw invalid('is truncated inside its header');
  const text = buf.toString(major === 3 ? 'utf8' : 'latin1', prefix, prefix + length).trim();
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text)?.[1];
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text)?.[1];
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(text)?.[1];
  if (
    !text.startsWith('{') ||
    !text.endsWith('}') ||
    descr === undefined ||
    fortran === undefined ||
    shape === undefined
  ) {
    throw invalid(
      `has a header that is not a plain {'descr', 'fortran_order', 'shape'} dict (structured dtypes are not supported): ${quote(text)}`,
    );
  }
  const dims = shape
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  if (!dims.every((d) => /^\d{1,16}$/.test(d)))
    throw invalid(`has shape (${quote(shape)}); dimensions must be non-negative integers`);
  return { descr, fortranOrder: fortran === 'True', shape: dims.map(Number), dataOffset: prefix + length };
}

function splitDescr(descr: string): { byteOrder: string; code: string; width: number } {
  const m = /^([<>|=]?)([a-zA-Z])(\d+)$/.exec(descr);
  if (!m)
    throw invalid(
      `has dtype ${quote(descr)}, which is not a simple numeric or unicode type (object arrays need pickle, which is refused)`,
    );
  return { byteOrder: m[1], code: m[2], width: Number(m[3]) };
}

/**
 * U<width>: UTF-32 code points, NUL-padded to `width` per element. Built a code point at a time:
 * spreading a row of them into one call would let the dtype's width choose the argument count.
 */
function readStrings(bytes: Buffer, width: number, bigEndian: boolean): string[] {
  const out: string[] = [];
  for (let off = 0; off < bytes.length; off += 4 * width) {
    let s = '';
    for (let k = 0; k < width; k++) {
      const cp = bigEndian ? bytes.readUInt32BE(off + 4 * k) : bytes.readUInt32LE(off + 4 * k);
      if (cp === 0) break;
      if (cp > kMaxCodePoint)
        throw invalid(`holds code point 0x${cp.toString(16)} in element ${out.length}; Unicode ends at 0x10ffff`);
      s += String.fromCodePoint(cp);
    }
    out.push(s);
  }
  return out;
}

/** Fortran (column-major) order → C (row-major) order, walking C indices with an odometer. */
function toCOrder(t: Tensor): Tensor {
  const { dims, data: src } = t;
  const rank = dims.length;
  return Tensor.build(t.type, dims, null, 'the application/x-npy body', () => {
    const out = allocate(t.type, src.length) as unknown[];
    const fStride: number[] = [];
    for (let ax = 0, s = 1; ax < rank; s *= dims[ax], ax++) fStride.push(s);
    const index = new Array<number>(rank).fill(0);
    let f = 0;
    for (let c = 0; c < src.length; c++) {
      out[c] = (src as ArrayLike<unknown>)[f];
      for (let ax = rank - 1; ax >= 0; ax--) {
        f += fStride[ax];
        if (++index[ax] < dims[ax]) break;
        f -= fStride[ax] * dims[ax];
        index[ax] = 0;
      }
    }
    return out as never;
  });
}

/** The bytes np.save writes for the same array (C order, little-endian), header padding included. */
export function writeNpy(t: PlainTensor): Buffer {
  let descr: string;
  let data: Buffer;
  if (t.type === 'string') {
    const strings = t.data as string[];
    let width = 1;
    for (const s of strings) width = Math.max(width, [...s].length);
    descr = `<U${width}`;
    data = Buffer.alloc(strings.length * width * 4);
    strings.forEach((s, i) => [...s].forEach((ch, k) => data.writeUInt32LE(ch.codePointAt(0)!, (i * width + k) * 4)));
  } else {
    const code = kCodeByType.get(t.type);
    if (!code) throw new MmeError('MME_ERR_NOT_ACCEPTABLE', `tensor type ${t.type} has no .npy dtype`);
    descr = `${code.endsWith('1') ? '|' : '<'}${code}`;
    const typed = t.data as NumericArray;
    data = Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
  }
  return Buffer.concat([npyHeader(descr, t.dims), data]);
}

/** numpy.lib.format._write_array_header, byte for byte. */
function npyHeader(descr: string, dims: readonly number[]): Buffer {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  if (dims.length > 0) dict += ' '.repeat(kGrowthAxisDigits - String(dims[0]).length);
  // Version 2.0 only when the header outgrows 1.0's u16 length, as np.save decides.
  const major = paddedLength(10, dict.length) <= 0xffff ? 1 : 2;
  const prefix = major === 1 ? 10 : 12;
  const length = paddedLength(prefix, dict.length);
  const head = Buffer.alloc(prefix + length, ' ');
  kMagic.copy(head);
  head[6] = major;
  head[7] = 0;
  if (major === 1) head.writeUInt16LE(length, 8);
  else head.writeUInt32LE(length, 8);
  head.write(dict, prefix, 'latin1');
  head[head.length - 1] = 0x0a;
  return head;
}

/** Header text plus the spaces and "\n" that bring the data to a 64-byte boundary. */
function paddedLength(prefix: number, textLength: number): number {
  return textLength + 1 + kAlign - ((prefix + textLength + 1) % kAlign);
}
