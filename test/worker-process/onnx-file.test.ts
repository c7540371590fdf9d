/**
 * The worker's own reader of model.onnx (onnx-file.ts) against onnx-proto's full decode: the same
 * answer for every fixture model, a real exported model and random models, and a plain Error (never
 * a crash or a hang) for a damaged file. A model that needs no rewrite loads without onnx-proto.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import Long from 'long';
import { onnx } from 'onnx-proto';
import { readOnnxFile } from '../../src/worker-process/onnx-file';
import { valueTypeNotation } from '../../src/worker-process/onnx-types';
import { zipMapOutputs } from '../../src/worker-process/served-outputs';
import {
  addModel,
  externalDataModel,
  fixedShapeModel,
  IDENTITY_TYPES,
  identityModel,
  imageClassifierModel,
  mlpModel,
  multiIoModel,
  paddleOcrClsPath,
} from '../../harness/onnx-models';
import {
  externalDataClassifier,
  futureOpsetModel,
  labelEncoderModel,
  linearClassifierModel,
  sequenceOutputModel,
  treeClassifierModel,
  treeRegressorModel,
  unknownOperatorModel,
} from '../fixtures/onnx-ml-models';

/** What the reader reports, in plain data. */
function cheap(file: string): unknown {
  const m = readOnnxFile(file);
  return {
    irVersion: m.irVersion,
    producerName: m.producerName,
    producerVersion: m.producerVersion,
    domain: m.domain,
    modelVersion: m.modelVersion,
    docString: m.docString,
    opsets: [...m.opsets],
    metadataProps: Object.entries(m.metadataProps),
    nodes: m.nodes.map(({ name, opType, domain, input, output }) => ({ name, opType, domain, input, output })),
    inputs: m.inputs.map(({ name, tensor }) => ({ name, tensor })),
    outputs: m.outputs.map(({ name, tensor }) => ({ name, tensor })),
  };
}

/** The same, from onnx-proto's decode of the whole file. */
function full(bytes: Uint8Array): unknown {
  const m = onnx.ModelProto.decode(bytes);
  const opsets = new Map<string, number>();
  for (const o of m.opsetImport) opsets.set(o.domain === 'ai.onnx' ? '' : (o.domain ?? ''), Number(o.version));
  const props = new Map<string, string>();
  for (const e of m.metadataProps) props.set(e.key ?? '', e.value ?? '');
  const value = (v: onnx.IValueInfoProto) => ({ name: v.name ?? '', tensor: !!v.type?.tensorType });
  return {
    irVersion: Number(m.irVersion),
    producerName: m.producerName,
    producerVersion: m.producerVersion,
    domain: m.domain,
    modelVersion: Number(m.modelVersion),
    docString: m.docString,
    opsets: [...opsets],
    metadataProps: [...props],
    nodes: (m.graph?.node ?? []).map((n) => ({
      name: n.name,
      opType: n.opType,
      domain: n.domain,
      input: n.input,
      output: n.output,
    })),
    inputs: (m.graph?.input ?? []).map(value),
    outputs: (m.graph?.output ?? []).map(value),
  };
}

/** The notation onnx-types.ts gave before it read bytes itself: from onnx-proto's decoded TypeProto. */
function notation(type: onnx.ITypeProto | null | undefined): string {
  const element = (t: number) => (onnx.TensorProto.DataType[t] as string | undefined)?.toLowerCase() ?? `type${t}`;
  if (!type) return 'unknown';
  if (type.tensorType) return `tensor(${element(type.tensorType.elemType ?? 0)})`;
  if (type.sparseTensorType) return `sparse_tensor(${element(type.sparseTensorType.elemType ?? 0)})`;
  if (type.sequenceType) return `seq(${notation(type.sequenceType.elemType)})`;
  if (type.mapType) return `map(${element(type.mapType.keyType ?? 0)},${notation(type.mapType.valueType)})`;
  if (type.optionalType) return `optional(${notation(type.optionalType.elemType)})`;
  return 'unknown';
}

/** Every value's type notation, read by hand and from onnx-proto's decode. */
function notations(file: string, bytes: Uint8Array): [string[], string[]] {
  const m = readOnnxFile(file);
  const g = onnx.ModelProto.decode(bytes).graph;
  return [
    [...m.inputs, ...m.outputs].map((v) => valueTypeNotation(m, v)),
    [...(g?.input ?? []), ...(g?.output ?? [])].map((v) => notation(v.type)),
  ];
}

const kLabels = [0n, 1n] as const;
const kStump = {
  postTransform: 'NONE' as const,
  trees: [
    {
      feature: 0,
      threshold: 0.5,
      yes: { votes: [[0, 0.25]] as Array<[number, number]> },
      no: { votes: [[0, 0.75]] as Array<[number, number]> },
    },
  ],
};
const kLinear = {
  offset: [0, 1],
  scale: [1, 2],
  coefficients: [
    [1, -1],
    [-1, 1],
  ],
  intercepts: [0, 0.5],
  labels: kLabels,
};

const fixtures: Array<[string, Uint8Array]> = [
  ['mlp', mlpModel({ sizes: [4, 8, 3] })],
  ['mlp fixed batch', mlpModel({ sizes: [2, 2], dynamicBatch: false })],
  ...IDENTITY_TYPES.map((t): [string, Uint8Array] => [`identity ${t}`, identityModel(t)]),
  ['multi-io', multiIoModel()],
  ['add', addModel()],
  ['external data', externalDataModel('weights.bin')],
  ['fixed shape', fixedShapeModel()],
  ['image classifier', imageClassifierModel()],
  [
    'tree classifier (ZipMap, metadata)',
    treeClassifierModel({
      ensemble: kStump,
      labels: ['no', 'yes'],
      features: 1,
      metadataProps: { customer: 'acme', __proto__: 'x' },
    }),
  ],
  ['tree regressor', treeRegressorModel(kStump, 1)],
  ['linear classifier', linearClassifierModel(kLinear)],
  ['label encoder', labelEncoderModel(['a', 'b'])],
  ['future opset', futureOpsetModel(99)],
  ['unknown operator', unknownOperatorModel('NoSuchOp')],
  ['sequence output', sequenceOutputModel()],
  [
    'external-data classifier',
    externalDataClassifier({
      weights: [
        [1, 2],
        [3, 4],
      ],
      bias: [0, 1],
    }).model,
  ],
];

// Random models: names in any script, every kind of value type, repeated and odd fields.
const text = fc.string({ unit: 'grapheme', maxLength: 12 });
const elemType = fc.integer({ min: 0, max: 16 });
const tensorType = elemType.map((t) => ({ tensorType: { elemType: t } }));
const { typeProto } = fc.letrec<{ typeProto: onnx.ITypeProto }>((tie) => ({
  typeProto: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tensorType,
    elemType.map((t) => ({ sparseTensorType: { elemType: t } })),
    fc.constant({ denotation: 'IMAGE' }),
    fc.constant({ sequenceType: {} }),
    tie('typeProto').map((t) => ({ sequenceType: { elemType: t } })),
    fc.record({ keyType: elemType, valueType: tie('typeProto') }, { requiredKeys: [] }).map((m) => ({ mapType: m })),
    tie('typeProto').map((t) => ({ optionalType: { elemType: t } })),
    // Several members of the oneof at once: onnx-proto keeps them all, and tensor wins.
    fc.tuple(tensorType, tie('typeProto')).map(([t, other]) => ({ ...other, ...t })),
  ),
}));
const valueInfo = fc.record({ name: text, type: typeProto, docString: text }, { requiredKeys: ['name'] });
const node = fc.record(
  {
    name: text,
    opType: text,
    domain: text,
    input: fc.array(text, { maxLength: 4 }),
    output: fc.array(text, { maxLength: 4 }),
    docString: text,
  },
  { requiredKeys: [] },
);
const model = fc.record(
  {
    irVersion: fc.nat(),
    producerName: text,
    producerVersion: text,
    domain: text,
    modelVersion: fc.nat(),
    docString: text,
    opsetImport: fc.array(
      fc.record({ domain: fc.oneof(text, fc.constantFrom('', 'ai.onnx', 'ai.onnx.ml')), version: fc.nat({ max: 40 }) }),
      { maxLength: 4 },
    ),
    metadataProps: fc.array(fc.record({ key: fc.oneof(text, fc.constant('__proto__')), value: text }), {
      maxLength: 4,
    }),
    graph: fc.record({
      name: text,
      node: fc.array(node, { maxLength: 6 }),
      input: fc.array(valueInfo, { maxLength: 4 }),
      output: fc.array(valueInfo, { maxLength: 4 }),
    }),
  },
  { requiredKeys: [] },
);

describe('model.onnx read by hand (onnx-file.ts), as onnx-proto reads it', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'onnx-file-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const written = (bytes: Uint8Array) => {
    const file = path.join(dir, 'model.onnx');
    writeFileSync(file, bytes);
    return file;
  };

  it("gives onnx-proto's answer for every fixture model and a real exported one", () => {
    for (const [name, bytes] of fixtures) assert.deepEqual(cheap(written(bytes)), full(bytes), name);
    const real = paddleOcrClsPath();
    assert.deepEqual(cheap(real), full(readFileSync(real)));
  });

  it("gives onnx-proto's answer for random models", () => {
    fc.assert(
      fc.property(model, (m) => {
        const bytes = onnx.ModelProto.encode(m).finish();
        assert.deepEqual(cheap(written(bytes)), full(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it("names every value's type as onnx-proto's decode does, nested or not", () => {
    fc.assert(
      fc.property(fc.array(valueInfo, { minLength: 1, maxLength: 6 }), (values) => {
        const bytes = onnx.ModelProto.encode({ graph: { input: values, output: values.slice(1) } }).finish();
        const [cheapNotation, fullNotation] = notations(written(bytes), bytes);
        assert.deepEqual(cheapNotation, fullNotation);
      }),
      { numRuns: 300 },
    );
  });

  it("reads a ZipMap's class labels as onnx-proto does: int64s exactly (packed or not), else strings", () => {
    const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    const attributes = fc.array(
      fc.oneof(
        fc.array(int64, { maxLength: 5 }).map((v) => ({
          name: 'classlabels_int64s',
          type: onnx.AttributeProto.AttributeType.INTS,
          ints: v.map((x) => Long.fromString(String(x))),
        })),
        fc.array(text, { maxLength: 5 }).map((v) => ({
          name: 'classlabels_strings',
          type: onnx.AttributeProto.AttributeType.STRINGS,
          strings: v.map((x) => Buffer.from(x)),
        })),
      ),
      { minLength: 1, maxLength: 3 },
    );
    fc.assert(
      fc.property(attributes, (attribute) => {
        const zipMap = {
          opType: 'ZipMap',
          domain: 'ai.onnx.ml',
          input: ['p'],
          output: ['out'],
          attribute: attribute as onnx.IAttributeProto[],
        };
        const out = {
          name: 'out',
          type: { sequenceType: { elemType: { mapType: { keyType: 7, valueType: { tensorType: { elemType: 1 } } } } } },
        };
        const bytes = onnx.ModelProto.encode({ graph: { node: [zipMap], output: [out] } }).finish();
        const decoded = onnx.ModelProto.decode(bytes).graph?.node?.[0]?.attribute ?? [];
        const ints = decoded.find((a) => a.name === 'classlabels_int64s')?.ints ?? [];
        const strings = decoded.find((a) => a.name === 'classlabels_strings')?.strings ?? [];
        const expected =
          ints.length > 0
            ? ints.map((v) => (Number.isSafeInteger(Number(v)) ? Number(v) : String(v)))
            : strings.map((v) => Buffer.from(v).toString('utf8'));
        let got: unknown;
        try {
          got = zipMapOutputs(readOnnxFile(written(bytes)))[0].classLabels;
        } catch (err) {
          got = /has neither classlabels_int64s nor classlabels_strings/.test((err as Error).message) ? [] : err;
        }
        assert.deepEqual(got, expected);
      }),
      { numRuns: 300 },
    );
  });

  it('reads packed int64 class labels too (protobuf writers may pack them)', () => {
    const varints = (xs: bigint[]) =>
      Buffer.concat(
        xs.map((x) =>
          Buffer.from(
            onnx.AttributeProto.encode({ i: Long.fromString(String(x)) as never })
              .finish()
              .subarray(1),
          ),
        ),
      );
    const field = (n: number, payload: Uint8Array) =>
      Buffer.concat([Buffer.from([(n << 3) | 2, payload.length]), payload]);
    const labels = [5n, -1n, 2n ** 62n];
    const attribute = Buffer.concat([field(1, Buffer.from('classlabels_int64s')), field(8, varints(labels))]);
    const node = Buffer.concat([
      onnx.NodeProto.encode({ opType: 'ZipMap', domain: 'ai.onnx.ml', input: ['p'], output: ['out'] }).finish(),
      field(5, attribute),
    ]);
    const out = onnx.ValueInfoProto.encode({
      name: 'out',
      type: { sequenceType: { elemType: { mapType: { keyType: 7, valueType: { tensorType: { elemType: 1 } } } } } },
    }).finish();
    const graph = Buffer.concat([field(1, node), field(12, out)]);
    const bytes = field(7, graph);
    assert.deepEqual(zipMapOutputs(readOnnxFile(written(bytes)))[0].classLabels, [5, -1, String(2n ** 62n)]);
    assert.deepEqual(
      onnx.ModelProto.decode(bytes).graph?.node?.[0]?.attribute?.[0]?.ints?.map(String),
      labels.map(String),
    );
  });

  it('takes the last of a repeated graph and the last type of a value, as onnx-proto does', () => {
    const one = onnx.ModelProto.encode({
      graph: { node: [{ opType: 'A' }], input: [{ name: 'x', type: { tensorType: { elemType: 1 } } }] },
    }).finish();
    const two = onnx.ModelProto.encode({
      graph: { node: [{ opType: 'B' }], input: [{ name: 'y', type: { sequenceType: {} } }] },
    }).finish();
    const retyped = onnx.ValueInfoProto.encode({ name: 'z', type: { sequenceType: {} } }).finish();
    const tail = Buffer.concat([Buffer.from([0x5a, retyped.length]), retyped]); // GraphProto.input (11)
    const bytes = Buffer.concat([one, two, Buffer.from([0x3a, tail.length]), tail]); // ModelProto.graph (7)
    assert.deepEqual(cheap(written(bytes)), full(bytes));
  });

  /** The reader's verdict on a file: what it read, or its refusal, which must be a plain Error naming the byte. */
  function verdict(bytes: Uint8Array): { read: unknown } | { refused: string } {
    try {
      return { read: cheap(written(bytes)) };
    } catch (err) {
      assert.ok(err instanceof Error && /^not an ONNX model: .* byte \d+/.test(err.message), String(err));
      return { refused: err.message };
    }
  }

  const kDamaged = Buffer.from(treeClassifierModel({ ensemble: kStump, labels: ['no', 'yes'], features: 1 }));

  it('reads a file with a byte changed or refuses it with a plain Error naming the byte, never another error or a hang', () => {
    fc.assert(
      fc.property(fc.nat({ max: kDamaged.length - 1 }), fc.nat({ max: 255 }), (at, byte) => {
        const bad = Buffer.from(kDamaged);
        bad[at] = byte;
        verdict(bad);
      }),
      { numRuns: 300 },
    );
  });

  /** Where the top-level fields of a well-formed message end: a walk by hand of its varints, apart from the reader. */
  function topLevelEnds(bytes: Uint8Array): Set<number> {
    let at = 0;
    const varint = () => {
      let n = 0;
      for (let shift = 1; ; shift *= 128) {
        const b = bytes[at++];
        n += (b & 0x7f) * shift;
        if (b < 0x80) return n;
      }
    };
    const ends = new Set<number>([0]);
    while (at < bytes.length) {
      const wire = varint() & 7;
      if (wire === 0) varint();
      else if (wire === 2) {
        const length = varint();
        at += length;
      } else at += wire === 1 ? 8 : 4;
      ends.add(at);
    }
    return ends;
  }

  it('refuses a file cut inside a field, and reads a file cut between its fields as onnx-proto does', () => {
    const ends = topLevelEnds(kDamaged);
    let refused = 0;
    fc.assert(
      fc.property(fc.nat({ max: kDamaged.length - 1 }), (at) => {
        const cut = kDamaged.subarray(0, at);
        if (ends.has(at)) assert.deepEqual(verdict(cut), { read: full(cut) }, `cut at byte ${at}, between fields`);
        else {
          assert.ok('refused' in verdict(cut), `read a file cut at byte ${at} of ${kDamaged.length}, inside a field`);
          refused++;
        }
      }),
      { numRuns: 200 },
    );
    // Almost every cut falls inside a field: a run that refused none would prove nothing.
    assert.ok(refused > 0, 'no generated cut fell inside a field');
  });

  it('loads a model without requiring onnx-proto, a ZipMap classifier too (its graph rewritten)', () => {
    const file = written(treeClassifierModel({ ensemble: kStump, labels: [3n, 2n ** 60n], features: 1 }));
    const script = `
      const { openSession } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'worker-process', 'session'))});
      openSession({ modelName: 'm', modelDir: '.', onnxPath: ${JSON.stringify(file)}, handlerPath: null, batchSize: 1, gpuId: -1, intraOpThreads: 1, interOpThreads: 1, graphOptimizationLevel: 'all',
        decodeInputRequest: false, concurrentBatches: false, maxResponseSize: 1e6, maxStreamBuffer: 1e6, maxRequestElements: 1e6, workerId: 'w', slot: 0, shared: false }, () => undefined)
        .then((s) => console.log(JSON.stringify(s.outputs.map((o) => o.classLabels ?? o.type)), Object.keys(require.cache).some((k) => k.includes('onnx-proto')) ? 'required' : 'not required'));`;
    assert.equal(
      execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim(),
      `["int64",[3,"${2n ** 60n}"]] not required`,
    );
  });
});
