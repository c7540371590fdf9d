/**
 * The rounds the boundary property found bugs with (test/hardening/boundary-property.test.ts runs
 * each as a regression test; scripts/hardening/boundary-memory.ts runs them again under the RSS
 * bounds, since several of the bugs were memory): each the round fast-check shrank to, with the
 * seed that found it (against main at 4c7446b).
 */
import type { Round, ValidCase } from './cases';

/** Canary k's rows as the generator makes them distinct (harness/boundary/generators.ts distinct()), from values shrunk to 0. */
const rowsOf = (k: number) => [Array.from({ length: 16 }, (_, j) => 1000 * (k + 1) + j / 8)];
const canary = {
  invokeNamed: (k: number): Extract<ValidCase, { via: 'http' }> => ({
    kind: 'valid',
    via: 'http',
    route: 'invoke',
    codec: 'named',
    npy: '<f4',
    accept: 'none',
    contentType: 'exact',
    rows: rowsOf(k),
  }),
  v2Json: (k: number): Extract<ValidCase, { via: 'v2' }> => ({
    kind: 'valid',
    via: 'v2',
    binaryIn: 'none',
    binaryOut: false,
    nested: false,
    rows: rowsOf(k),
  }),
  kserveTyped: (k: number, namedOutput = false): ValidCase => ({
    kind: 'valid',
    via: 'kserve',
    raw: false,
    namedOutput,
    rows: rowsOf(k),
  }),
  torchserveNamed: (k: number): ValidCase => ({
    kind: 'valid',
    via: 'torchserve',
    codec: 'named',
    key: 'data',
    extraKeys: [],
    rows: rowsOf(k),
  }),
};

const kCsv6MB = {
  kind: 'malformed',
  attack: 'oversized',
  carrier: 'invoke',
  where: 'csv-0x01',
  bytes: 6_000_000,
} as const;
/** Two 6 MB text/csv bodies of 0x01 among six canaries: one batch. */
export const kCsvPairRound: Round = {
  cases: [
    canary.invokeNamed(0),
    kCsv6MB,
    canary.invokeNamed(1),
    kCsv6MB,
    canary.invokeNamed(2),
    canary.invokeNamed(3),
    canary.invokeNamed(4),
    canary.invokeNamed(5),
  ],
};

/** ModelInfer with a field of wire type `wire` after its input, then an input of 1 000 000 empty bytes_contents, between canaries. */
const strayFieldThenBytes = (wire: 3 | 7, field: number): Round => ({
  cases: [
    canary.kserveTyped(0),
    { kind: 'malformed', attack: 'wire-type', carrier: 'kserve', wire, field, where: 'end', then: 'bytes-empty' },
    canary.v2Json(1),
  ],
});

export interface Regression {
  /** What the server does now. */
  name: string;
  /** What it did when the property found it. */
  was: string;
  /** How it was found: the fast-check seed (and mode) whose search shrank to this round. */
  found: string;
  round: Round;
}

/**
 * Bugs the property found, each as the round it shrank to. "hunt seed" is fc.check over roundArb
 * with a property that failed only on a failure not seen before (so each search ends at a new
 * bug), against 4c7446b in dedicated mode, with the generator's first draft (2–6 canaries a round,
 * before 1c4871d): the rounds replay as they are, the seeds only with that draft.
 */
export const kRegressions: Regression[] = [
  {
    name: 'npy <U0 (1, 16) with no data, beside canaries: refused alone, every canary keeps its own answer',
    was: "the attacker got a canary's answer and each later canary its neighbour's",
    found: 'hunt seed 7000; over TorchServe Predictions: hunt seed 7130',
    round: {
      cases: [
        canary.kserveTyped(0),
        { kind: 'malformed', attack: 'npy-zero-itemsize', carrier: 'invoke', descr: '<U0', rows: 1, dataBytes: 0 },
        canary.v2Json(1),
        { kind: 'malformed', attack: 'json-proto-name', carrier: 'invoke', where: 'named-input', name: '__proto__' },
      ],
    },
  },
  {
    name: 'npy <U0 (1000000, 16) with no data: refused without running a row',
    was: 'a million-row batch, 500 RESPONSE_TOO_LARGE, worker +500 MiB',
    found: 'hunt seed 7117',
    round: {
      cases: [
        canary.torchserveNamed(0),
        {
          kind: 'malformed',
          attack: 'npy-zero-itemsize',
          carrier: 'invoke',
          descr: '<U0',
          rows: 1_000_000,
          dataBytes: 0,
        },
        canary.kserveTyped(1),
      ],
    },
  },
  {
    name: 'npy <U1 holding code point 0x110000: 400',
    was: '500 from String.fromCodePoint',
    found: 'hunt seed 7013',
    round: {
      cases: [
        canary.v2Json(0),
        { kind: 'malformed', attack: 'npy-code-point', carrier: 'invoke', points: [0x110000], bigEndian: false },
        canary.kserveTyped(1),
        { kind: 'malformed', attack: 'json-syntax', carrier: 'invoke', body: '' },
      ],
    },
  },
  {
    name: 'npy <U300000: 400',
    was: '500, the code points spread into one call',
    found: 'hunt seed 7078',
    round: {
      cases: [
        canary.invokeNamed(0),
        { kind: 'malformed', attack: 'npy-long-string', carrier: 'invoke', width: 300_000 },
        canary.v2Json(1),
        { kind: 'malformed', attack: 'lying-content-type', carrier: 'invoke', actual: 'named', declared: 'image/png' },
      ],
    },
  },
  {
    name: 'JSON 100 000 deep on invoke: 400',
    was: '500, recursion',
    found: 'hunt seed 7039',
    round: {
      cases: [
        canary.v2Json(0),
        { kind: 'malformed', attack: 'json-deep', carrier: 'invoke', shape: 'named', depth: 100_000, open: '[' },
        canary.kserveTyped(1),
      ],
    },
  },
  {
    name: 'JSON 100 000 deep in v2 data on /v2 infer: 400',
    was: '500',
    found: 'hunt seed 7052',
    round: {
      cases: [
        canary.invokeNamed(0),
        { kind: 'malformed', attack: 'json-deep', carrier: 'v2', shape: 'named', depth: 100_000, open: '[' },
        canary.invokeNamed(1),
      ],
    },
  },
  {
    name: 'JSON 100 000 deep over TorchServe Predictions: INVALID_ARGUMENT',
    was: 'INTERNAL',
    found: 'hunt seed 7091',
    round: {
      cases: [
        canary.v2Json(0),
        { kind: 'malformed', attack: 'json-deep', carrier: 'torchserve', shape: 'named', depth: 100_000, open: '[' },
        canary.invokeNamed(1),
        { kind: 'malformed', attack: 'bytes-empty', carrier: 'v2', count: 16, rows16: false },
      ],
    },
  },
  {
    name: '100 000 bytes of 0x01 as text/csv: a 400 under 64 KiB',
    was: 'a 700 KB body',
    found: 'hunt seed 7065',
    round: {
      cases: [
        canary.v2Json(0),
        { kind: 'malformed', attack: 'oversized', carrier: 'invoke', where: 'csv-0x01', bytes: 100_000 },
        canary.invokeNamed(1),
        {
          kind: 'malformed',
          attack: 'lying-header-length',
          carrier: 'v2',
          how: 'header',
          declared: '-1',
          binary: false,
        },
      ],
    },
  },
  {
    name: 'a 100 000-character input name on /v2 infer: a 400 under 64 KiB',
    was: 'a 100 KB body',
    found: 'hunt seed 7104',
    round: {
      cases: [
        canary.kserveTyped(0),
        { kind: 'malformed', attack: 'oip-oversized', carrier: 'v2', where: 'name', bytes: 100_000 },
        canary.invokeNamed(1),
      ],
    },
  },
  {
    name: 'a 1 MB input name over KServe ModelInfer: INVALID_ARGUMENT, and the other calls on the connection answered',
    was: 'no answer, and every call on the connection hung',
    found: 'hunt seed 7026 (canary rows simplified: 5 shrinks in 45 s steps)',
    round: {
      cases: [
        canary.v2Json(0),
        { kind: 'malformed', attack: 'oip-oversized', carrier: 'kserve-typed', where: 'name', bytes: 1_000_000 },
        canary.kserveTyped(1, true),
      ],
    },
  },
  {
    name: 'outputs [{"name": "__proto__"}] on /v2 infer: 400',
    was: '500',
    found: 'hunt seed 7143',
    round: {
      cases: [
        canary.invokeNamed(0),
        { kind: 'malformed', attack: 'oip-proto-name', carrier: 'v2', where: 'output', name: '__proto__' },
        canary.v2Json(1),
        { kind: 'malformed', attack: 'lying-binary-size', carrier: 'v2', size: 'minus4' },
      ],
    },
  },
  {
    name: 'outputs [{"name": "__proto__"}] over KServe ModelInfer: INVALID_ARGUMENT',
    was: 'INTERNAL',
    found: 'hunt seed 7156',
    round: {
      cases: [
        canary.invokeNamed(0),
        { kind: 'malformed', attack: 'oip-proto-name', carrier: 'kserve-raw', where: 'output', name: '__proto__' },
        canary.v2Json(1),
      ],
    },
  },
  {
    name: 'two 6 MB text/csv bodies of 0x01 in one batch: each a small 400, the worker or host kept',
    was: 'errors past the frame limit, the worker (shared: the host) killed, 500 for the whole batch',
    found: "issue 21's report, reproduced at 4c7446b; generated as a repeated attack",
    round: kCsvPairRound,
  },
  {
    name: 'KServe typed BYTES of 1 000 000 empty elements (2 MB): INVALID_ARGUMENT',
    was: '+268 MiB server RSS, kept',
    found: 'property seeds 2010110037 and -180047174, dedicated, on the working tree before 8f2a852',
    round: {
      cases: [
        canary.kserveTyped(0),
        { kind: 'malformed', attack: 'bytes-empty', carrier: 'kserve-typed', count: 1_000_000, rows16: false },
        canary.v2Json(1),
      ],
    },
  },
  {
    name: 'Inference-Header-Content-Length: abc on /v2 infer with a JSON body: 400',
    was: '200, the header ignored',
    found: 'property seed -1552635069, shared, before 8fb7c6d (and at 4c7446b)',
    round: {
      cases: [
        canary.v2Json(0),
        {
          kind: 'malformed',
          attack: 'lying-header-length',
          carrier: 'v2',
          how: 'header',
          declared: 'abc',
          binary: false,
        },
        canary.kserveTyped(1),
      ],
    },
  },
  {
    name: 'KServe ModelInfer with an empty group (field 15) after the input, then 1 000 000 empty bytes_contents: INVALID_ARGUMENT, undecoded',
    was: 'decoded past the group, +237 MiB server RSS',
    found: "issue 33's report (item 3), as a round of the wire-type generator",
    round: strayFieldThenBytes(3, 15),
  },
  {
    name: 'KServe ModelInfer with field 7 (raw_input_contents) of wire type 7 after the input, then 1 000 000 empty bytes_contents: INVALID_ARGUMENT, undecoded',
    was: 'protobufjs decoded the tag as raw_input_contents (a declared field is read as its type whatever the wire type) and went on past the wire walk, which had stopped there: +250 MiB server RSS',
    found:
      'property seed 656881897 path "79", dedicated, on q-chunks after merging main at 2c3b6a8 (the shrinking outlasted the test timeout; the first failing round, printed at once, was cut down by hand)',
    round: strayFieldThenBytes(7, 7),
  },
  {
    name: 'TorchServe Predictions with an empty group inside its "data" map entry: INVALID_ARGUMENT',
    was: 'gRPC OK: the wire walk did not enter map entries, and protobufjs skips a group inside one',
    found: 'property seed 49441070 path "91" (shrunk 773 times), dedicated, on q-chunks after merging main at 2c3b6a8',
    round: {
      cases: [
        canary.invokeNamed(0),
        {
          kind: 'malformed',
          attack: 'wire-type',
          carrier: 'torchserve',
          wire: 3,
          field: 3,
          where: 'nested',
          then: 'nothing',
        },
        canary.kserveTyped(1),
      ],
    },
  },
  {
    name: 'a canary of 64 rows in one-byte chunks beside canaries in 64-byte and arbitrary chunks: the chunk-count refusal for it, the others their answers',
    was: 'one Buffer and one parser callback per chunk: 1 000 000 one-byte chunks were +505 MB and 3 s of event loop',
    found: "issue 33's report (item 1), as a round of the chunking generator",
    round: {
      cases: [
        {
          ...canary.invokeNamed(0),
          rows: Array.from({ length: 64 }, (_, r) => rowsOf(0)[0].map((v) => v + r)),
          chunks: [1],
        },
        { ...canary.invokeNamed(1), chunks: [64] },
        { ...canary.v2Json(2), chunks: [1, 4096, 3] },
      ],
    },
  },
];
