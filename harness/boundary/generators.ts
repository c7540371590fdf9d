/** fast-check generators of boundary cases (cases.ts) and of rounds: canaries of known answer among attacks. */
import fc from 'fast-check';
import { kBrokenNpy } from './bytes';
import {
  kColumns,
  kProtoNames,
  type AcceptKind,
  type BodyCodec,
  type BoundaryCase,
  type Carrier,
  type HttpRoute,
  type JsonShape,
  type MalformedCase,
  type NpyLayout,
  type OipCarrier,
  type Round,
  type ValidCase,
} from './cases';

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
