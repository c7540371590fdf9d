/**
 * Requests at the server's boundary, valid and hostile, over every codec and route: SageMaker
 * invoke (/models/{name}/invoke, /invocations, /predictions) with JSON (named, instances, v2, bare),
 * CSV and .npy; /v2/models/{name}/infer JSON and binary; KServe ModelInfer (typed and raw
 * contents) and TorchServe Predictions over gRPC.
 *
 * A case is plain data (what fast-check prints as a counterexample and a regression test keeps);
 * its bytes are built only when it is sent, so a 6 MB body or 300 000 levels of nesting cost a few
 * characters in a report. Every case targets a model with one input `x` (float32 [batch, 16]) and
 * one output `y`: y = x + 1 (harness/onnx-models.ts addModel), so a valid case has a known
 * answer and anything else is malformed for it. Valid cases are the canaries of
 * scripts/hardening/boundary-fuzz.ts, malformed ones the attacks.
 */
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import { FREE_CHUNKS, MIN_CHUNK_BYTES } from '../src/http/body';
import { f32 } from './float32';
import type { GrpcClients } from './grpc-clients';

export const kInput = 'x';
export const kOutput = 'y';
export const kColumns = 16;

/** Largest error body (HTTP) or status details plus trailing metadata (gRPC) a refusal may carry. */
export const kMaxErrorBytes = 64 * 1024;

export type HttpRoute = 'invoke' | 'invocations' | 'predictions';
export type JsonShape = 'named' | 'instances' | 'v2' | 'bare';
export type BodyCodec = JsonShape | 'csv' | 'npy';
/** How a valid .npy body lays out its rows. */
export type NpyLayout = '<f4' | '>f4' | '<f8' | '<i4' | 'fortran' | 'v2' | 'v3';
export type AcceptKind = 'none' | '*/*' | 'json' | 'csv' | 'npy' | 'json-proto-params';
export type ProtoName = '__proto__' | 'constructor' | 'toString' | 'hasOwnProperty' | 'valueOf';

const kProtoNames: readonly ProtoName[] = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];

/** A request with a known answer: rows of float32 values whose answer is each value + 1. */
export type ValidCase =
  | {
      kind: 'valid';
      via: 'http';
      route: HttpRoute;
      codec: BodyCodec;
      npy: NpyLayout;
      accept: AcceptKind;
      contentType: 'exact' | 'absent' | 'params';
      rows: number[][];
      chunks?: number[];
    }
  | {
      kind: 'valid';
      via: 'v2';
      binaryIn: 'none' | 'header' | 'content-type';
      binaryOut: boolean;
      nested: boolean;
      rows: number[][];
      chunks?: number[];
    }
  | { kind: 'valid'; via: 'kserve'; raw: boolean; namedOutput: boolean; rows: number[][] }
  | {
      kind: 'valid';
      via: 'torchserve';
      codec: BodyCodec;
      key: 'data' | 'body';
      extraKeys: ProtoName[];
      rows: number[][];
    };

/** Where a body-level attack travels: an HTTP invoke route, or TorchServe Predictions. */
export type Carrier = HttpRoute | 'torchserve';
/** Where an OIP attack travels: /v2 infer, an invoke route with the OIP content type, or KServe (typed or raw contents). */
export type OipCarrier = 'v2' | 'invoke-oip' | 'kserve-typed' | 'kserve-raw';

/** Requests no model can run: each must be refused alone with a small 4xx (INVALID_ARGUMENT over gRPC). */
export type MalformedCase = { kind: 'malformed' } & (
  | {
      attack: 'npy-zero-itemsize';
      carrier: Carrier;
      descr: '<U0' | '>U0' | '<f0' | '<i0';
      rows: number;
      dataBytes: number;
    }
  | { attack: 'npy-huge-shape'; carrier: Carrier; descr: '<f4' | '<U1' | '|b1'; shape: string; dataBytes: number }
  | { attack: 'npy-code-point'; carrier: Carrier; points: number[]; bigEndian: boolean }
  | { attack: 'npy-long-string'; carrier: Carrier; width: number }
  | { attack: 'npy-broken'; carrier: Carrier; variant: number }
  | { attack: 'json-deep'; carrier: Carrier | 'v2'; shape: JsonShape; depth: number; open: '[' | '{"a":' }
  | {
      attack: 'json-proto-name';
      carrier: Carrier;
      where: 'named-input' | 'named-extra' | 'v2-input' | 'v2-datatype';
      name: ProtoName;
    }
  | { attack: 'oip-proto-name'; carrier: OipCarrier; where: 'output' | 'input' | 'datatype'; name: ProtoName }
  | {
      attack: 'oversized';
      carrier: Carrier;
      where: 'csv-0x01' | 'json-element' | 'json-input-name' | 'v2-datatype' | 'npy-header';
      bytes: number;
    }
  | { attack: 'oip-oversized'; carrier: OipCarrier; where: 'name' | 'datatype' | 'output'; bytes: number }
  | { attack: 'lying-content-type'; carrier: Carrier; actual: BodyCodec; declared: string }
  | {
      attack: 'lying-header-length';
      carrier: 'v2' | 'invoke-oip';
      how: 'header' | 'content-type';
      declared: string;
      binary: boolean;
    }
  | {
      attack: 'lying-binary-size';
      carrier: 'v2' | 'invoke-oip';
      size: 'minus4' | 'plus4' | 'zero' | 'negative' | 'fraction' | 'string' | 'huge' | 'null' | 'bool';
    }
  | { attack: 'lying-shape'; carrier: OipCarrier | 'invoke-json'; shape: Array<number | string> }
  | { attack: 'bytes-empty'; carrier: OipCarrier; count: number; rows16: boolean }
  | { attack: 'duplicate-input'; carrier: OipCarrier | 'invoke-json'; second: 'same' | 'other-shape' }
  | {
      attack: 'bad-values';
      carrier: Carrier;
      codec: JsonShape | 'csv';
      variant: 'string' | 'null' | 'bool' | 'object' | 'ragged' | 'columns4' | 'rank3' | 'empty' | 'word' | 'wide';
    }
  | { attack: 'json-syntax'; carrier: Carrier; body: string }
  | { attack: 'kserve-contents'; variant: 'raw-count' | 'typed-field' | 'typed-count' | 'raw-for-no-input' }
  | { attack: 'torchserve-no-body'; keys: string[] }
  | {
      /** A field of a wire type no proto3 message has (groups 3 and 4; 6 and 7 are none at all), raw bytes past the client's encoder. */
      attack: 'wire-type';
      carrier: 'kserve' | 'torchserve';
      wire: 3 | 4 | 6 | 7;
      field: number;
      where: 'start' | 'end' | 'nested';
      /** After it, 1 000 000 empty bytes_contents (KServe): what a walk that stopped at it would let through. */
      then: 'nothing' | 'bytes-empty';
    }
);

export type BoundaryCase = ValidCase | MalformedCase;

export interface Round {
  cases: BoundaryCase[];
}

// ---------------------------------------------------------------------------------------------------
// Bytes

const flat = (r: readonly number[][]) => r.flat();
const rowsOf = (n: number) =>
  Array.from({ length: n }, (_, i) => Array.from({ length: kColumns }, (_, j) => i + j / 8));
const oneRow = rowsOf(1);

const kEmpty = Buffer.alloc(0);
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

function v2Tensor(r: number[][], nested = false): Record<string, unknown> {
  return { name: kInput, shape: [r.length, kColumns], datatype: 'FP32', data: nested ? r : flat(r) };
}

function jsonBody(shape: JsonShape, r: unknown): string {
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

const kMediaType: Record<BodyCodec, string> = {
  named: 'application/json',
  instances: 'application/json',
  v2: 'application/json',
  bare: 'application/json',
  csv: 'text/csv',
  npy: 'application/x-npy',
};
export const OIP_TYPE = 'application/vnd.sagemaker-triton.binary+json';

/** The body of a valid request in `codec`. */
function codecBody(codec: BodyCodec, r: number[][], npy: NpyLayout = '<f4'): Buffer {
  if (codec === 'csv') return Buffer.from(`${r.map((row) => row.join(',')).join('\n')}\n`);
  if (codec === 'npy') return npyRows(r, npy);
  return Buffer.from(jsonBody(codec, r));
}

/** Broken .npy files; the index is the case's `variant`. */
const kBrokenNpy: ReadonlyArray<() => Buffer> = [
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

// ---------------------------------------------------------------------------------------------------
// Generators

/** Values exact in float32 (multiples of 1/8 below 2^14), so every codec carries them unchanged. */
const value = fc.integer({ min: -100_000, max: 100_000 }).map((v) => v / 8);
const row = fc.array(value, { minLength: kColumns, maxLength: kColumns });
/** Mostly a few rows; sometimes enough that a batch's offsets run long. */
const rows = fc.oneof(
  { weight: 4, arbitrary: fc.array(row, { minLength: 1, maxLength: 3 }) },
  { weight: 1, arbitrary: fc.array(row, { minLength: 20, maxLength: 64 }) },
);
/**
 * An HTTP body sent whole, or chunked: the chunk sizes, repeated until the body is out. Arbitrary
 * sizes, and runs of tiny chunks, which past FREE_CHUNKS the server refuses (chunkVerdict).
 */
const chunks = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.array(fc.integer({ min: 1, max: 4096 }), { minLength: 1, maxLength: 6 }) },
  { weight: 2, arbitrary: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }) },
);
const protoName = fc.constantFrom(...kProtoNames);
const carrier = fc.constantFrom<Carrier>('invoke', 'invocations', 'predictions', 'torchserve');
const oipCarrier = fc.constantFrom<OipCarrier>('v2', 'invoke-oip', 'kserve-typed', 'kserve-raw');
const jsonShape = fc.constantFrom<JsonShape>('named', 'instances', 'v2', 'bare');
const bodyCodec = fc.constantFrom<BodyCodec>('named', 'instances', 'v2', 'bare', 'csv', 'npy');
const big = (sizes: number[]) => fc.constantFrom(...sizes);

export const validArb: fc.Arbitrary<ValidCase> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('valid' as const),
      via: fc.constant('http' as const),
      route: fc.constantFrom<HttpRoute>('invoke', 'invocations', 'predictions'),
      codec: bodyCodec,
      npy: fc.constantFrom<NpyLayout>('<f4', '>f4', '<f8', '<i4', 'fortran', 'v2', 'v3'),
      accept: fc.constantFrom<AcceptKind>('none', '*/*', 'json', 'csv', 'npy', 'json-proto-params'),
      contentType: fc.constantFrom('exact' as const, 'absent' as const, 'params' as const),
      rows,
      chunks,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('valid' as const),
      via: fc.constant('v2' as const),
      binaryIn: fc.constantFrom('none' as const, 'header' as const, 'content-type' as const),
      binaryOut: fc.boolean(),
      nested: fc.boolean(),
      rows,
      chunks,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('valid' as const),
      via: fc.constant('kserve' as const),
      raw: fc.boolean(),
      namedOutput: fc.boolean(),
      rows,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('valid' as const),
      via: fc.constant('torchserve' as const),
      codec: bodyCodec,
      key: fc.constantFrom('data' as const, 'body' as const),
      extraKeys: fc.subarray([...kProtoNames], { maxLength: 2 }),
      rows,
    }),
  },
);

const m = <T extends object>(fields: { [K in keyof T]: fc.Arbitrary<T[K]> }) =>
  fc.record({ kind: fc.constant('malformed' as const), ...fields } as never) as fc.Arbitrary<MalformedCase>;
const lit = <T extends string>(s: T) => fc.constant(s);

export const malformedArb: fc.Arbitrary<MalformedCase> = fc.oneof(
  {
    weight: 3,
    arbitrary: m({
      attack: lit('npy-zero-itemsize'),
      carrier,
      descr: fc.constantFrom('<U0', '>U0', '<f0', '<i0'),
      rows: big([1, 2, 1_000_000]),
      dataBytes: big([0, 64]),
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('npy-huge-shape'),
      carrier,
      descr: fc.constantFrom('<f4', '<U1', '|b1'),
      shape: fc.constantFrom(
        '(1000000, 16)',
        '(4294967296, 16)',
        '(9007199254740993, 16)',
        '(100000000000000000000, 16)',
        '(65536, 65536, 16)',
      ),
      dataBytes: big([0, 128]),
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('npy-code-point'),
      carrier,
      points: fc.array(
        fc.oneof(
          fc.constantFrom(0x110000, 0xffffffff, 0x7fffffff, 0xd800, 0xdfff),
          fc.integer({ min: 0x110000, max: 0xffffffff }),
        ),
        { minLength: 1, maxLength: 3 },
      ),
      bigEndian: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: m({ attack: lit('npy-long-string'), carrier, width: big([300_000, 1_000_000]) }) },
  { weight: 1, arbitrary: m({ attack: lit('npy-broken'), carrier, variant: fc.nat({ max: kBrokenNpy.length - 1 }) }) },
  {
    weight: 3,
    arbitrary: m({
      attack: lit('json-deep'),
      carrier: fc.constantFrom<Carrier | 'v2'>('invoke', 'invocations', 'predictions', 'torchserve', 'v2'),
      shape: jsonShape,
      depth: big([100_000, 200_000, 300_000]),
      open: fc.constantFrom('[' as const, '{"a":' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('json-proto-name'),
      carrier,
      where: fc.constantFrom('named-input', 'named-extra', 'v2-input', 'v2-datatype'),
      name: protoName,
    }),
  },
  {
    weight: 3,
    arbitrary: m({
      attack: lit('oip-proto-name'),
      carrier: oipCarrier,
      where: fc.constantFrom('output', 'input', 'datatype'),
      name: protoName,
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('oversized'),
      carrier,
      where: fc.constantFrom('csv-0x01', 'json-element', 'json-input-name', 'v2-datatype', 'npy-header'),
      bytes: big([100_000, 1_000_000, 6_000_000]),
    }),
  },
  {
    weight: 1,
    arbitrary: m({
      attack: lit('oip-oversized'),
      carrier: oipCarrier,
      where: fc.constantFrom('name', 'datatype', 'output'),
      bytes: big([100_000, 1_000_000, 5_000_000]),
    }),
  },
  {
    weight: 3,
    arbitrary: m({
      attack: lit('lying-content-type'),
      carrier,
      actual: bodyCodec,
      declared: fc.constantFrom(
        'application/json',
        'text/csv',
        'application/x-npy',
        'image/png',
        'text/plain',
        'application/xml',
        'application/vnd.sagemaker-triton.binary+json',
      ),
    }).filter(isLie),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('lying-header-length'),
      carrier: fc.constantFrom('v2' as const, 'invoke-oip' as const),
      how: fc.constantFrom('header' as const, 'content-type' as const),
      declared: fc.oneof(
        fc
          .integer({ min: -9, max: 9 })
          .filter((d) => d !== 0)
          .map((d) => `${d > 0 ? '+' : ''}${d}`),
        fc.constantFrom('abc', '-1', '1e9', '0x10', '99999999999999999999'),
      ),
      binary: fc.boolean(),
    }).filter(isLie),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('lying-binary-size'),
      carrier: fc.constantFrom('v2' as const, 'invoke-oip' as const),
      size: fc.constantFrom('minus4', 'plus4', 'zero', 'negative', 'fraction', 'string', 'huge', 'null', 'bool'),
    }),
  },
  {
    weight: 3,
    arbitrary: m({
      attack: lit('lying-shape'),
      carrier: fc.constantFrom<OipCarrier | 'invoke-json'>(
        'v2',
        'invoke-oip',
        'kserve-typed',
        'kserve-raw',
        'invoke-json',
      ),
      shape: fc.constantFrom<Array<number | string>>(
        [1_000_000, 16],
        [4294967296, 16],
        [2 ** 53, 16],
        [-1, 16],
        [1.5, 16],
        ['1', '16'],
        [16],
        [1, 16, 1],
        [0, 16],
        [4, 4],
        [],
        [2, 16],
        [1e300, 16],
      ),
    })
      // gRPC shapes are int64: a client cannot even send a fraction, and "1", "16" is the true shape there.
      .filter(
        (c) =>
          !(
            c.attack === 'lying-shape' &&
            c.carrier.startsWith('kserve') &&
            (!c.shape.every((d) => Number.isSafeInteger(Number(d))) || c.shape.map(Number).join() === `1,${kColumns}`)
          ),
      ),
  },
  {
    weight: 1,
    arbitrary: m({
      attack: lit('duplicate-input'),
      carrier: fc.constantFrom<OipCarrier | 'invoke-json'>(
        'v2',
        'invoke-oip',
        'kserve-typed',
        'kserve-raw',
        'invoke-json',
      ),
      second: fc.constantFrom('same' as const, 'other-shape' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('bytes-empty'),
      carrier: oipCarrier,
      count: big([16, 100_000, 1_000_000]),
      rows16: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('bad-values'),
      carrier,
      codec: fc.constantFrom<JsonShape | 'csv'>('named', 'instances', 'v2', 'bare', 'csv'),
      variant: fc.constantFrom(
        'string',
        'null',
        'bool',
        'object',
        'ragged',
        'columns4',
        'rank3',
        'empty',
        'word',
        'wide',
      ),
    })
      // v2 data may be nested any way its shape allows, and [0, 16] with no data is a request of no rows.
      .filter(
        (c) => !(c.attack === 'bad-values' && c.codec === 'v2' && (c.variant === 'rank3' || c.variant === 'empty')),
      ),
  },
  {
    weight: 1,
    arbitrary: m({
      attack: lit('json-syntax'),
      carrier,
      body: fc.constantFrom(
        '',
        'null',
        '1',
        '"x"',
        '{}',
        '{"inputs":',
        '{"inputs": null}',
        '{"inputs": 5}',
        '{"inputs": {}}',
        '{"instances": {}}',
        '[]',
        '[[]]',
        '{"inputs": [{}]}',
        '{"inputs": [null]}',
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: m({
      attack: lit('kserve-contents'),
      variant: fc.constantFrom('raw-count', 'typed-field', 'typed-count', 'raw-for-no-input'),
    }),
  },
  {
    weight: 2,
    arbitrary: m({
      attack: lit('wire-type'),
      carrier: fc.constantFrom('kserve' as const, 'torchserve' as const),
      wire: fc.constantFrom(3 as const, 4 as const, 6 as const, 7 as const),
      field: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 2 ** 29 - 1 })),
      where: fc.constantFrom('start' as const, 'end' as const, 'nested' as const),
      then: fc.constantFrom('nothing' as const, 'bytes-empty' as const),
    }).filter((c) => !(c.attack === 'wire-type' && c.carrier === 'torchserve' && c.then === 'bytes-empty')),
  },
  {
    weight: 1,
    arbitrary: m({
      attack: lit('torchserve-no-body'),
      keys: fc.subarray(['content-type', 'accept', 'Data', 'BODY', ...kProtoNames], { maxLength: 3 }),
    }),
  },
);

/**
 * Every canary row of a round made distinct (and never the zero row, whose answer a shifted batch
 * hands out): canary k's row r, column j, gets 1000 (k + 1) + 100 r + j / 8 added, so even
 * rows shrunk to zeros tell apart whose answer a caller got. Still multiples of 1/8 below 2^15.
 */
function distinct(c: ValidCase, k: number): ValidCase {
  return { ...c, rows: c.rows.map((r, ri) => r.map((v, j) => v + 1000 * (k + 1) + 100 * ri + j / 8)) };
}

/**
 * A round's attacks: 1–4 of any kind, or one attack 2–4 times, since some cost only when they
 * meet in one batch (two 6 MB CSV errors outgrow the frame limit together, not alone).
 */
const attacksArb: fc.Arbitrary<MalformedCase[]> = fc.oneof(
  { weight: 3, arbitrary: fc.array(malformedArb, { minLength: 1, maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(malformedArb, fc.integer({ min: 2, max: 4 }))
      .map(([c, n]) => new Array<MalformedCase>(n).fill(c)),
  },
);

/** Requests in a round: the batching model's batch_size (scripts/hardening/boundary-fuzz.ts), so a round fills one batch at once. */
export const kRoundSize = 8;

/**
 * A round: 1–4 attacks and canaries for the rest of kRoundSize, sent at once and interleaved, so
 * the attacks land inside the canaries' batch.
 */
export const roundArb: fc.Arbitrary<Round> = fc
  .tuple(fc.array(validArb, { minLength: kRoundSize - 1, maxLength: kRoundSize - 1 }), attacksArb)
  .map(([pool, malformed]) => {
    const valid = pool.slice(0, kRoundSize - malformed.length);
    const cases: BoundaryCase[] = [];
    for (let i = 0; i < valid.length; i++) {
      cases.push(distinct(valid[i], i));
      if (i < malformed.length) cases.push(malformed[i]);
    }
    return { cases };
  });

/** A declared type that some real decoder would accept for these bytes is no lie. */
function isLie(c: MalformedCase): boolean {
  if (c.attack === 'lying-content-type') {
    const json = c.actual !== 'csv' && c.actual !== 'npy';
    if (c.declared === 'application/json') return !json;
    if (c.declared === 'text/csv') return c.actual !== 'csv';
    if (c.declared === 'application/x-npy') return c.actual !== 'npy';
    // The OIP codec reads a v2 JSON body with no binary part as its header.
    if (c.declared === 'application/vnd.sagemaker-triton.binary+json') return c.actual !== 'v2';
    return true;
  }
  if (c.attack === 'lying-header-length') {
    // A length the codec cannot read (no digits in json-header-size; Inference-Header-Content-Length on
    // an invoke route, which only /v2 reads) means "the whole body is the header": a lie only with binary after it.
    const readable =
      c.carrier === 'v2' && c.how === 'header'
        ? true
        : c.carrier === 'invoke-oip' && c.how === 'header'
          ? false
          : /^[+-]\d+$|^\d/.test(c.declared);
    return readable || c.binary;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Calls

/** A request as it goes on the wire. */
export type Call =
  | { transport: 'http'; path: string; headers: Record<string, string>; body: Buffer; chunks?: number[] }
  | { transport: 'grpc-raw'; service: 'kserve' | 'torchserve'; bytes: Buffer }
  | { transport: 'kserve'; request: Record<string, unknown> }
  | { transport: 'torchserve'; request: Record<string, unknown> };

/** A body and its headers, sent on an HTTP invoke route or as TorchServe Predictions. */
interface Payload {
  contentType: string | null;
  body: Buffer;
  headers?: Record<string, string>;
}

function carry(carrier: Carrier, model: string, p: Payload): Call {
  if (carrier === 'torchserve') {
    const input: Record<string, Buffer> = { data: p.body };
    if (p.contentType !== null) input['content-type'] = Buffer.from(p.contentType);
    return { transport: 'torchserve', request: { model_name: model, input } };
  }
  const headers: Record<string, string> = { ...p.headers };
  if (p.contentType !== null) headers['content-type'] = p.contentType;
  const path =
    carrier === 'invoke'
      ? `/models/${model}/invoke`
      : carrier === 'predictions'
        ? `/predictions/${model}`
        : '/invocations';
  if (carrier === 'invocations') headers['x-amzn-sagemaker-target-model'] = model;
  return { transport: 'http', path, headers, body: p.body };
}

/** A v2 inference header (and its binary tensors) on /v2 infer or an invoke route with the OIP content type. */
function oipHttp(
  carrier: 'v2' | 'invoke-oip',
  model: string,
  header: unknown,
  binary: Buffer | null,
  lie?: { how: 'header' | 'content-type'; declared: string },
): Call {
  const json = Buffer.from(JSON.stringify(header));
  const body = binary ? Buffer.concat([json, binary]) : json;
  const headers: Record<string, string> = {};
  const length = lie ? declaredLength(lie.declared, json.length) : String(json.length);
  const how = lie?.how ?? (carrier === 'v2' ? 'header' : 'content-type');
  if (carrier === 'v2') {
    headers['content-type'] = how === 'header' ? 'application/json' : `${OIP_TYPE};json-header-size=${length}`;
    if (how === 'header' && (binary || lie)) headers['inference-header-content-length'] = length;
    return { transport: 'http', path: `/v2/models/${model}/infer`, headers, body };
  }
  headers['content-type'] = how === 'header' || (!binary && !lie) ? OIP_TYPE : `${OIP_TYPE};json-header-size=${length}`;
  if (how === 'header' && lie) headers['inference-header-content-length'] = length;
  return { transport: 'http', path: `/models/${model}/invoke`, headers, body };
}

function declaredLength(declared: string, actual: number): string {
  return /^[+-]\d+$/.test(declared) ? String(actual + Number(declared)) : declared;
}

/** A KServe ModelInferRequest for tensors given as v2 inputs with their bytes. */
function kserve(
  model: string,
  raw: boolean,
  inputs: Array<{
    name: string;
    datatype: string;
    shape: Array<number | string>;
    bytes: Buffer;
    typed?: Record<string, unknown[]>;
  }>,
  outputs: string[] = [],
): Call {
  return {
    transport: 'kserve',
    request: {
      model_name: model,
      inputs: inputs.map((t) => ({
        name: t.name,
        datatype: t.datatype,
        shape: t.shape.map((d) => String(d)),
        ...(raw
          ? {}
          : {
              contents: t.typed ?? {
                fp32_contents: Array.from(new Float32Array(t.bytes.buffer, t.bytes.byteOffset, t.bytes.length / 4)),
              },
            }),
      })),
      outputs: outputs.map((name) => ({ name })),
      raw_input_contents: raw ? inputs.map((t) => t.bytes) : [],
    },
  };
}

const kAccept: Record<AcceptKind, string | null> = {
  none: null,
  '*/*': '*/*',
  json: 'application/json',
  csv: 'text/csv',
  npy: 'application/x-npy',
  'json-proto-params': 'application/json;__proto__=1;constructor=2;q=1',
};

export function validCall(c: ValidCase, model: string): Call {
  switch (c.via) {
    case 'http': {
      const media = kMediaType[c.codec];
      const contentType =
        c.contentType === 'exact'
          ? media
          : c.contentType === 'params'
            ? `${media.toUpperCase()}; charset=utf-8`
            : media === 'application/json'
              ? null
              : media;
      const accept = kAccept[c.accept];
      return {
        ...carry(c.route, model, {
          contentType,
          body: codecBody(c.codec, c.rows, c.npy),
          headers: accept === null ? {} : { accept },
        }),
        chunks: c.chunks,
      } as Call;
    }
    case 'v2': {
      const binary = c.binaryIn !== 'none';
      const input = binary
        ? {
            name: kInput,
            shape: [c.rows.length, kColumns],
            datatype: 'FP32',
            parameters: { binary_data_size: c.rows.length * kColumns * 4 },
          }
        : v2Tensor(c.rows, c.nested);
      const header = {
        id: 'canary',
        inputs: [input],
        ...(c.binaryOut ? { outputs: [{ name: kOutput, parameters: { binary_data: true } }] } : {}),
      };
      const json = Buffer.from(JSON.stringify(header));
      if (!binary)
        return {
          transport: 'http',
          path: `/v2/models/${model}/infer`,
          headers: { 'content-type': 'application/json' },
          body: json,
          chunks: c.chunks,
        };
      const headers: Record<string, string> =
        c.binaryIn === 'header'
          ? { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(json.length) }
          : { 'content-type': `${OIP_TYPE};json-header-size=${json.length}` };
      return {
        transport: 'http',
        path: `/v2/models/${model}/infer`,
        headers,
        body: Buffer.concat([json, f32(flat(c.rows))]),
        chunks: c.chunks,
      };
    }
    case 'kserve':
      return kserve(
        model,
        c.raw,
        [{ name: kInput, datatype: 'FP32', shape: [c.rows.length, kColumns], bytes: f32(flat(c.rows)) }],
        c.namedOutput ? [kOutput] : [],
      );
    case 'torchserve': {
      // fromEntries makes "__proto__" an own key, as a map entry decoded off the wire is.
      const entries: Array<[string, Buffer]> = c.extraKeys.map((k) => [k, Buffer.from('x')]);
      entries.push([c.key, codecBody(c.codec, c.rows)]);
      if (c.codec === 'csv' || c.codec === 'npy') entries.push(['content-type', Buffer.from(kMediaType[c.codec])]);
      return { transport: 'torchserve', request: { model_name: model, input: Object.fromEntries(entries) } };
    }
  }
}

export function malformedCall(c: MalformedCase, model: string): Call {
  switch (c.attack) {
    case 'npy-zero-itemsize':
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(c.descr, `(${c.rows}, ${kColumns})`), Buffer.alloc(c.dataBytes, 0x41)),
      });
    case 'npy-huge-shape':
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(c.descr, c.shape), Buffer.alloc(c.dataBytes)),
      });
    case 'npy-code-point': {
      const data = Buffer.alloc(4 * c.points.length);
      c.points.forEach((p, i) => (c.bigEndian ? data.writeUInt32BE(p, 4 * i) : data.writeUInt32LE(p, 4 * i)));
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(`${c.bigEndian ? '>' : '<'}U${c.points.length}`, '(1, 1)'), data),
      });
    }
    case 'npy-long-string': {
      const data = Buffer.alloc(4 * c.width);
      for (let i = 0; i < c.width; i++) data.writeUInt32LE(0x61 + (i % 26), 4 * i);
      return carry(c.carrier, model, {
        contentType: 'application/x-npy',
        body: npyFile(npyDict(`<U${c.width}`, '(1, 1)'), data),
      });
    }
    case 'npy-broken':
      return carry(c.carrier, model, { contentType: 'application/x-npy', body: kBrokenNpy[c.variant]() });
    case 'json-deep': {
      const nest = deep(c.depth, c.open);
      const text =
        c.shape === 'named'
          ? `{"inputs":{"${kInput}":${nest}}}`
          : c.shape === 'instances'
            ? `{"instances":${nest}}`
            : c.shape === 'v2'
              ? `{"inputs":[{"name":"${kInput}","shape":[1,${kColumns}],"datatype":"FP32","data":${nest}}]}`
              : nest;
      if (c.carrier === 'v2')
        return {
          transport: 'http',
          path: `/v2/models/${model}/infer`,
          headers: { 'content-type': 'application/json' },
          body: Buffer.from(
            c.shape === 'v2'
              ? text
              : `{"inputs":[{"name":"${kInput}","shape":[1,${kColumns}],"datatype":"FP32","data":${nest}}]}`,
          ),
        };
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(text) });
    }
    case 'json-proto-name': {
      const r = oneRow;
      const text =
        c.where === 'named-input'
          ? `{"inputs":{"${c.name}":${JSON.stringify(r)}}}`
          : c.where === 'named-extra'
            ? `{"inputs":{"${kInput}":${JSON.stringify(r)},"${c.name}":${JSON.stringify(r)}}}`
            : c.where === 'v2-input'
              ? JSON.stringify({ inputs: [{ ...v2Tensor(r), name: c.name }] })
              : JSON.stringify({ inputs: [{ ...v2Tensor(r), datatype: c.name }] });
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(text) });
    }
    case 'oip-proto-name':
      return oipCase(c.carrier, model, {
        name: c.where === 'input' ? c.name : kInput,
        datatype: c.where === 'datatype' ? c.name : 'FP32',
        outputs: c.where === 'output' ? [c.name] : [],
      });
    case 'oversized': {
      const n = c.bytes;
      switch (c.where) {
        case 'csv-0x01':
          return carry(c.carrier, model, { contentType: 'text/csv', body: Buffer.alloc(n, 0x01) });
        case 'json-element':
          return carry(c.carrier, model, {
            contentType: 'application/json',
            body: Buffer.from(`{"inputs":{"${kInput}":[["${'a'.repeat(n)}"]]}}`),
          });
        case 'json-input-name':
          return carry(c.carrier, model, {
            contentType: 'application/json',
            body: Buffer.from(`{"inputs":{"${'n'.repeat(n)}":[[1]]}}`),
          });
        case 'v2-datatype':
          return carry(c.carrier, model, {
            contentType: 'application/json',
            body: Buffer.from(JSON.stringify({ inputs: [{ ...v2Tensor(oneRow), datatype: 'F'.repeat(n) }] })),
          });
        case 'npy-header':
          return carry(c.carrier, model, {
            contentType: 'application/x-npy',
            body: npyFile(
              `{'descr': '${'<'.repeat(n)}f4', 'fortran_order': False, 'shape': (1, 16), }`,
              f32(flat(oneRow)),
              2,
            ),
          });
      }
      break;
    }
    case 'oip-oversized': {
      const long = 'z'.repeat(c.bytes);
      return oipCase(c.carrier, model, {
        name: c.where === 'name' ? long : kInput,
        datatype: c.where === 'datatype' ? long : 'FP32',
        outputs: c.where === 'output' ? [long] : [],
      });
    }
    case 'lying-content-type':
      return carry(c.carrier, model, { contentType: c.declared, body: codecBody(c.actual, oneRow) });
    case 'lying-header-length': {
      const header = {
        inputs: [
          c.binary
            ? { name: kInput, shape: [1, kColumns], datatype: 'FP32', parameters: { binary_data_size: 64 } }
            : v2Tensor(oneRow),
        ],
      };
      return oipHttp(c.carrier, model, header, c.binary ? f32(flat(oneRow)) : null, {
        how: c.how,
        declared: c.declared,
      });
    }
    case 'lying-binary-size': {
      const sizes: Record<typeof c.size, unknown> = {
        minus4: 60,
        plus4: 68,
        zero: 0,
        negative: -64,
        fraction: 63.5,
        string: '64',
        huge: 2 ** 53,
        null: null,
        bool: true,
      };
      const header = {
        inputs: [
          { name: kInput, shape: [1, kColumns], datatype: 'FP32', parameters: { binary_data_size: sizes[c.size] } },
        ],
      };
      return oipHttp(c.carrier, model, header, f32(flat(oneRow)));
    }
    case 'lying-shape': {
      if (c.carrier === 'invoke-json')
        return carry('invoke', model, {
          contentType: 'application/json',
          body: Buffer.from(JSON.stringify({ inputs: [{ ...v2Tensor(oneRow), shape: c.shape }] })),
        });
      return oipCase(c.carrier, model, { shape: c.shape });
    }
    case 'bytes-empty': {
      const shape = c.rows16 && c.count % kColumns === 0 ? [c.count / kColumns, kColumns] : [c.count];
      return oipCase(c.carrier, model, {
        datatype: 'BYTES',
        shape,
        bytes: Buffer.alloc(4 * c.count),
        typed: { bytes_contents: new Array<Buffer>(c.count).fill(kEmpty) },
      });
    }
    case 'duplicate-input': {
      const second = c.second === 'same' ? oneRow : rowsOf(2);
      if (c.carrier === 'invoke-json')
        return carry('invoke', model, {
          contentType: 'application/json',
          body: Buffer.from(JSON.stringify({ inputs: [v2Tensor(oneRow), v2Tensor(second)] })),
        });
      const inputs = [oneRow, second].map((r) => ({
        name: kInput,
        datatype: 'FP32',
        shape: [r.length, kColumns],
        bytes: f32(flat(r)),
      }));
      if (c.carrier.startsWith('kserve')) return kserve(model, c.carrier === 'kserve-raw', inputs);
      const header = {
        inputs: inputs.map((t) => ({
          name: t.name,
          datatype: t.datatype,
          shape: t.shape,
          parameters: { binary_data_size: t.bytes.length },
        })),
      };
      return oipHttp(c.carrier as 'v2' | 'invoke-oip', model, header, Buffer.concat(inputs.map((t) => t.bytes)));
    }
    case 'bad-values': {
      const bad = badRows(c.variant);
      if (c.codec === 'csv')
        return carry(c.carrier, model, { contentType: 'text/csv', body: Buffer.from(kBadCsv[c.variant]) });
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(jsonBody(c.codec, bad)) });
    }
    case 'json-syntax':
      return carry(c.carrier, model, { contentType: 'application/json', body: Buffer.from(c.body) });
    case 'kserve-contents': {
      const bytes = f32(flat(oneRow));
      const input = { name: kInput, datatype: 'FP32', shape: ['1', String(kColumns)] };
      const request: Record<string, unknown> = {
        model_name: model,
        inputs: [{ ...input, contents: { fp32_contents: flat(oneRow) } }],
        outputs: [],
        raw_input_contents: [],
      };
      if (c.variant === 'raw-count') Object.assign(request, { inputs: [input], raw_input_contents: [bytes, bytes] });
      if (c.variant === 'typed-field')
        Object.assign(request, { inputs: [{ ...input, contents: { int_contents: flat(oneRow).map(Math.trunc) } }] });
      if (c.variant === 'typed-count')
        Object.assign(request, { inputs: [{ ...input, contents: { fp32_contents: flat(oneRow).slice(1) } }] });
      if (c.variant === 'raw-for-no-input') Object.assign(request, { inputs: [], raw_input_contents: [bytes] });
      return { transport: 'kserve', request };
    }
    case 'wire-type':
      return { transport: 'grpc-raw', service: c.carrier, bytes: wireTypeMessage(c, model) };
    case 'torchserve-no-body': {
      const input = Object.fromEntries(c.keys.map((k) => [k, Buffer.from(jsonBody('bare', oneRow))]));
      return { transport: 'torchserve', request: { model_name: model, input } };
    }
  }
  throw new Error(`no call for ${JSON.stringify(c)}`);
}

// Protobuf by hand: what the client library would never encode.
function pbVarint(n: number): Buffer {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return Buffer.from(out);
}
const pbTag = (field: number, wire: number) => pbVarint(field * 8 + wire);
const pbLen = (field: number, bytes: Buffer) => Buffer.concat([pbTag(field, 2), pbVarint(bytes.length), bytes]);
const pbString = (field: number, text: string) => pbLen(field, Buffer.from(text));

/** The field of a wire type no proto3 message has: an empty group, a lone group end, or a tag of wire type 6 or 7. */
function strayField(wire: 3 | 4 | 6 | 7, field: number): Buffer {
  if (wire === 3) return Buffer.concat([pbTag(field, 3), pbTag(field, 4)]);
  if (wire === 4) return pbTag(field, 4);
  return Buffer.concat([pbTag(field, wire), Buffer.from([0])]);
}

/** A valid one-row request with a stray field inserted (at the start, the end, or inside its input or map entry). */
function wireTypeMessage(c: Extract<MalformedCase, { attack: 'wire-type' }>, model: string): Buffer {
  const stray = strayField(c.wire, c.field);
  const nested = c.where === 'nested' ? stray : kEmpty;
  let message: Buffer;
  if (c.carrier === 'torchserve') {
    const entry = Buffer.concat([pbString(1, 'data'), nested, pbLen(2, Buffer.from(jsonBody('bare', oneRow)))]);
    message = Buffer.concat([pbString(1, model), pbLen(3, entry)]);
  } else {
    const values = Buffer.concat(flat(oneRow).map((v) => f32([v])));
    const input = Buffer.concat([
      pbString(1, kInput),
      pbString(2, 'FP32'),
      pbLen(3, Buffer.concat([pbVarint(1), pbVarint(kColumns)])),
      nested,
      pbLen(5, pbLen(6, values)),
    ]);
    message = Buffer.concat([pbString(1, model), pbLen(5, input)]);
  }
  const after =
    c.then === 'bytes-empty'
      ? pbLen(
          5,
          Buffer.concat([
            pbString(1, 'b'),
            pbString(2, 'BYTES'),
            pbLen(3, pbVarint(1_000_000)),
            pbLen(5, Buffer.alloc(2_000_000, Buffer.from([0x42, 0x00]))),
          ]),
        )
      : kEmpty;
  const at = c.where === 'start' ? [stray, message] : c.where === 'end' ? [message, stray] : [message];
  return Buffer.concat([...at, after]);
}

/** CSV that is not rows of 16 numbers ("nan" and "inf" are numbers there, and a quoted "1" is 1). */
const kBadCsv: Record<Extract<MalformedCase, { attack: 'bad-values' }>['variant'], string> = {
  string: `${flat(oneRow).slice(1).join(',')},"x"\n`,
  null: `${flat(oneRow).slice(1).join(',')},null\n`,
  bool: `${flat(oneRow).slice(1).join(',')},true\n`,
  object: `${flat(oneRow).slice(1).join(',')},{}\n`,
  ragged: `${flat(oneRow).join(',')}\n${flat(oneRow).slice(1).join(',')}\n`,
  columns4: '1,2,3,4\n',
  rank3: `${flat(oneRow).join(',')},${flat(oneRow).join(',')}\n`,
  empty: '\n\n',
  word: `${flat(oneRow).slice(1).join(',')},abc\n`,
  wide: `${'1,'.repeat(299_999)}1\n`,
};

/** JSON rows that are not float32 [n, 16] numbers. */
function badRows(variant: Extract<MalformedCase, { attack: 'bad-values' }>['variant']): unknown[] {
  const row = flat(oneRow);
  switch (variant) {
    case 'string':
      return [[...row.slice(1), 'x']];
    case 'null':
      return [[...row.slice(1), null]];
    case 'bool':
      return [[...row.slice(1), true]];
    case 'object':
      return [[...row.slice(1), { v: 1 }]];
    case 'ragged':
      return [row, row.slice(1)];
    case 'columns4':
      return [[1, 2, 3, 4]];
    case 'rank3':
      return [[row]];
    case 'empty':
      return [];
    case 'word':
      return [[...row.slice(1), 'abc']];
    case 'wide':
      return [new Array<number>(300_000).fill(1)];
  }
}

/** One OIP input (one row by default, as binary or JSON data), altered as the attack says, on any OIP carrier. */
function oipCase(
  carrier: OipCarrier,
  model: string,
  o: {
    name?: string;
    datatype?: string;
    shape?: Array<number | string>;
    bytes?: Buffer;
    typed?: Record<string, unknown[]>;
    outputs?: string[];
  },
): Call {
  const name = o.name ?? kInput;
  const datatype = o.datatype ?? 'FP32';
  const shape = o.shape ?? [1, kColumns];
  const bytes = o.bytes ?? f32(flat(oneRow));
  const outputs = o.outputs ?? [];
  if (carrier === 'kserve-typed' || carrier === 'kserve-raw') {
    const typed = o.typed ?? (datatype === 'FP32' || !o.bytes ? { fp32_contents: flat(oneRow) } : undefined);
    return kserve(model, carrier === 'kserve-raw', [{ name, datatype, shape, bytes, typed }], outputs);
  }
  const header = {
    inputs: [{ name, datatype, shape, parameters: { binary_data_size: bytes.length } }],
    ...(outputs.length ? { outputs: outputs.map((n) => ({ name: n })) } : {}),
  };
  return oipHttp(carrier, model, header, bytes);
}

export function callOf(c: BoundaryCase, model: string): Call {
  return c.kind === 'valid' ? validCall(c, model) : malformedCall(c, model);
}

// ---------------------------------------------------------------------------------------------------
// Sending

export interface Endpoints {
  /** http://host:port of the inference listener. */
  url: string;
  grpc: GrpcClients;
}

/** What came back: an HTTP status or a gRPC status code, and the bytes the answer took. */
export interface Outcome {
  transport: Call['transport'];
  /** HTTP status; for gRPC the status code (0 = OK). */
  status: number;
  /** errorCode of an HTTP error body, or mme-error-code of a gRPC status. */
  errorCode: string;
  /** The body (HTTP) or prediction (TorchServe); a KServe response is in `message`. */
  body: Buffer;
  headers: Record<string, string>;
  message?: unknown;
  /** Bytes of the refusal: HTTP body, or gRPC details plus trailing metadata. */
  errorBytes: number;
  /** The request got no answer at all (connection reset, timeout). */
  transportError?: string;
}

/** Past the models' response_timeout (30 s) with room: a request still unanswered then never will be. */
const kAnswerTimeoutMs = 45_000;

export async function send(call: Call, to: Endpoints): Promise<Outcome> {
  if (call.transport === 'http') return sendHttp(call, to.url);
  const service = call.transport === 'grpc-raw' ? call.service : call.transport;
  const client = service === 'kserve' ? to.grpc.kserve : to.grpc.torchserve;
  const method = service === 'kserve' ? 'ModelInfer' : 'Predictions';
  return new Promise((resolve) => {
    const options = { deadline: Date.now() + kAnswerTimeoutMs };
    const done = (err: ServiceError | null, res: Record<string, unknown>) => {
      if (!err) {
        resolve({
          transport: call.transport,
          status: 0,
          errorCode: '',
          body: (res.prediction as Buffer | undefined) ?? Buffer.alloc(0),
          headers: {},
          message: res,
          errorBytes: 0,
        });
        return;
      }
      const metadata = err.metadata?.getMap() ?? {};
      const metaBytes = Object.entries(metadata).reduce(
        (n, [k, v]) => n + k.length + (Buffer.isBuffer(v) ? v.length : Buffer.byteLength(String(v))),
        0,
      );
      resolve({
        transport: call.transport,
        status: err.code,
        errorCode: String(metadata['mme-error-code'] ?? ''),
        body: Buffer.alloc(0),
        headers: {},
        errorBytes: Buffer.byteLength(err.details ?? '') + metaBytes,
      });
    };
    if (call.transport === 'grpc-raw') {
      // The bytes as they are, past the client library's encoder.
      const raw = (b: Buffer) => b;
      client.makeUnaryRequest(kRawPaths[service], raw, raw, call.bytes, new Metadata(), options, (err, res) =>
        done(err, { raw: res }),
      );
      return;
    }
    // A request the client library cannot encode throws here: a generator bug, not a server finding.
    client[method](call.request, new Metadata(), options, done);
  });
}

const kRawPaths = {
  kserve: '/inference.GRPCInferenceService/ModelInfer',
  torchserve: '/org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions',
} as const;

/** The body whole, or as a stream of pieces of the given sizes (repeated) that goes out one HTTP chunk each. */
function inChunks(body: Buffer, sizes: readonly number[] | undefined): Buffer | ReadableStream<Uint8Array> {
  if (!sizes) return body;
  const pieces = chunkPieces(body.length, sizes).map(([at, end]) => body.subarray(at, end));
  return new ReadableStream({
    start(controller) {
      for (const p of pieces) controller.enqueue(p);
      controller.close();
    },
  });
}

/** [start, end) of each chunk: `sizes` over and over until `length` bytes are covered. */
function chunkPieces(length: number, sizes: readonly number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let at = 0, i = 0; at < length; i++) {
    const end = Math.min(length, at + sizes[i % sizes.length]);
    out.push([at, end]);
    at = end;
  }
  return out;
}

/**
 * What the server must do with a chunked call: take it, refuse it (its chunks alone pass the
 * body reader's limit, src/http/body.ts), or either (within a margin of the limit: a chunk split
 * across two socket reads reaches the reader as two).
 */
export function chunkVerdict(call: Call): 'taken' | 'refused' | 'either' {
  if (call.transport !== 'http' || !call.chunks) return 'taken';
  let verdict: 'taken' | 'either' = 'taken';
  let n = 0;
  for (const [, end] of chunkPieces(call.body.length, call.chunks)) {
    const limit = FREE_CHUNKS + end / MIN_CHUNK_BYTES;
    if (++n > limit) return 'refused';
    if (n + 16 + n / 16 > limit) verdict = 'either';
  }
  return verdict;
}

/**
 * The server's refusal of a body in too many small chunks: by its errorCode, or under /v2, whose
 * error body is OIP's `{"error"}` with no code, by the body reader's message.
 */
export function isChunkRefusal(o: Outcome): boolean {
  if (o.status !== 400) return false;
  if (o.errorCode === 'MME_ERR_BODY_CHUNKS_TOO_SMALL') return true;
  try {
    const { error } = JSON.parse(o.body.toString('utf8')) as { error?: unknown };
    return typeof error === 'string' && /^The chunked request body came in \d+ chunks for \d+ bytes;/.test(error);
  } catch {
    return false;
  }
}

async function sendHttp(call: Extract<Call, { transport: 'http' }>, url: string): Promise<Outcome> {
  try {
    const res = await fetch(`${url}${call.path}`, {
      method: 'POST',
      headers: call.headers,
      body: inChunks(call.body, call.chunks),
      signal: AbortSignal.timeout(kAnswerTimeoutMs),
      duplex: 'half',
    });
    const body = Buffer.from(await res.arrayBuffer());
    let errorCode = '';
    if (res.status >= 400) {
      try {
        const code = (JSON.parse(body.toString('utf8')) as { errorCode?: unknown }).errorCode ?? '';
        // A string as it is (isChunkRefusal compares it); anything else shown as JSON.
        errorCode = typeof code === 'string' ? code : JSON.stringify(code);
      } catch {
        errorCode = 'unparsable error body';
      }
    }
    return {
      transport: 'http',
      status: res.status,
      errorCode,
      body,
      headers: Object.fromEntries(res.headers),
      errorBytes: res.status >= 400 ? body.length : 0,
    };
  } catch (err) {
    return {
      transport: 'http',
      status: 0,
      errorCode: '',
      body: Buffer.alloc(0),
      headers: {},
      errorBytes: 0,
      transportError: `${(err as Error).name}: ${(err as Error).message} ${(err as { cause?: Error }).cause?.message ?? ''}`,
    };
  }
}

// ---------------------------------------------------------------------------------------------------
// Answers

const kGrpcOk = 0;
const kGrpcInvalidArgument = 3;
const kGrpcNames = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** "HTTP 500 MME_ERR_INTERNAL" or "gRPC INTERNAL MME_ERR_INTERNAL": what a failure report says came back. */
export function describeOutcome(o: Outcome): string {
  if (o.transportError) return `no answer (${o.transportError})`;
  const status = o.transport === 'http' ? `HTTP ${o.status}` : `gRPC ${kGrpcNames[o.status] ?? o.status}`;
  return `${status}${o.errorCode ? ` ${o.errorCode}` : ''}`;
}

function succeeded(o: Outcome): boolean {
  return !o.transportError && (o.transport === 'http' ? o.status === 200 : o.status === kGrpcOk);
}

/**
 * Why a malformed case's outcome breaks the rules (a small 4xx, INVALID_ARGUMENT over gRPC), or
 * null: `what` stays the same from run to run, `detail` has the numbers.
 */
export function refusalProblem(o: Outcome): { what: string; detail: string } | null {
  if (o.transportError) return { what: 'no answer', detail: describeOutcome(o) };
  const refused = o.transport === 'http' ? o.status >= 400 && o.status < 500 : o.status === kGrpcInvalidArgument;
  if (!refused) {
    const what = `${describeOutcome(o)} instead of ${o.transport === 'http' ? 'a 4xx' : 'INVALID_ARGUMENT'}`;
    return { what, detail: what };
  }
  if (o.errorBytes > kMaxErrorBytes)
    return { what: `${describeOutcome(o)} over ${kMaxErrorBytes} bytes`, detail: `a ${o.errorBytes}-byte error` };
  return null;
}

/** The rows of a valid case's answer, whatever the route and codec it was answered in; throws when the answer is not one. */
export function answerRows(c: ValidCase, o: Outcome): number[][] {
  if (!succeeded(o)) throw new Error(`${describeOutcome(o)}: ${o.body.toString('utf8').slice(0, 300)}`);
  switch (c.via) {
    case 'http': {
      if (c.accept === 'csv') return csvRows(o.body.toString('utf8'));
      if (c.accept === 'npy') return npyAnswerRows(o.body);
      const json = JSON.parse(o.body.toString('utf8')) as Record<string, unknown>;
      return jsonRows(c.codec === 'csv' || c.codec === 'npy' ? 'bare' : c.codec, json);
    }
    case 'torchserve': {
      const json = JSON.parse(o.body.toString('utf8')) as Record<string, unknown>;
      return jsonRows(c.codec === 'csv' || c.codec === 'npy' ? 'bare' : c.codec, json);
    }
    case 'v2': {
      const headerLength = o.headers['inference-header-content-length'];
      if (!c.binaryOut) {
        if (headerLength !== undefined) throw new Error('a JSON answer came with Inference-Header-Content-Length');
        return jsonRows('v2', JSON.parse(o.body.toString('utf8')) as Record<string, unknown>);
      }
      const n = Number(headerLength);
      const header = JSON.parse(o.body.subarray(0, n).toString('utf8')) as {
        outputs: Array<{ name: string; shape: number[]; parameters?: { binary_data_size?: number } }>;
      };
      const out = header.outputs.find((t) => t.name === kOutput)!;
      const bin = o.body.subarray(n);
      if (out.parameters?.binary_data_size !== bin.length)
        throw new Error(`binary_data_size ${out.parameters?.binary_data_size} but ${bin.length} bytes follow`);
      return reshape(Array.from(new Float32Array(Uint8Array.from(bin).buffer)), out.shape);
    }
    case 'kserve': {
      const res = o.message as {
        outputs: Array<{ name: string; shape: string[]; contents?: { fp32_contents?: number[] } }>;
        raw_output_contents: Buffer[];
      };
      const i = res.outputs.findIndex((t) => t.name === kOutput);
      const shape = res.outputs[i].shape.map(Number);
      const values = c.raw
        ? Array.from(new Float32Array(Uint8Array.from(res.raw_output_contents[i]).buffer))
        : res.outputs[i].contents!.fp32_contents!;
      return reshape(values, shape);
    }
  }
}

function jsonRows(format: JsonShape, json: Record<string, unknown>): number[][] {
  switch (format) {
    case 'named':
      return (json.outputs as Record<string, number[][]>)[kOutput];
    case 'instances':
      return json.predictions as number[][];
    case 'bare':
      return json as unknown as number[][];
    case 'v2': {
      const out = (json.outputs as Array<{ name: string; shape: number[]; data: number[] }>).find(
        (t) => t.name === kOutput,
      )!;
      return reshape(out.data, out.shape);
    }
  }
}

function reshape(values: readonly number[], shape: readonly number[]): number[][] {
  if (shape.length !== 2 || shape[1] !== kColumns || values.length !== shape[0] * kColumns)
    throw new Error(`answer shape [${shape.join(', ')}] with ${values.length} values`);
  return Array.from({ length: shape[0] }, (_, r) => values.slice(r * kColumns, (r + 1) * kColumns));
}

/** The rows of a CSV answer: one line a row, numbers separated by commas. */
export function csvRows(text: string): number[][] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split(',').map(Number));
}

/** A float32 .npy answer ('<f4', C order), read independently of the server's own codec. */
function npyAnswerRows(b: Buffer): number[][] {
  const prefix = b[6] === 1 ? 10 : 12;
  const length = b[6] === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const text = b.toString('latin1', prefix, prefix + length);
  if (!/'descr': '<f4'/.test(text) || !/'fortran_order': False/.test(text))
    throw new Error(`.npy answer header ${text.trim()}`);
  const shape = /'shape': \(([^)]*)\)/
    .exec(text)![1]
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '')
    .map(Number);
  return reshape(Array.from(new Float32Array(Uint8Array.from(b.subarray(prefix + length)).buffer)), shape);
}

/** A short name for a case in reports: its route and codec or attack. */
export function caseLabel(c: BoundaryCase): string {
  if (c.kind === 'valid') {
    switch (c.via) {
      case 'http':
        return `canary ${c.route}/${c.codec === 'npy' ? `npy ${c.npy}` : c.codec}`;
      case 'v2':
        return `canary v2/${c.binaryIn === 'none' ? 'json' : 'binary'}`;
      case 'kserve':
        return `canary kserve/${c.raw ? 'raw' : 'typed'}`;
      case 'torchserve':
        return `canary torchserve/${c.codec}`;
    }
  }
  const where = 'carrier' in c ? c.carrier : c.attack.startsWith('kserve') ? 'kserve' : 'torchserve';
  return `${where}/${c.attack}`;
}
