/**
 * scikit-learn / XGBoost / LightGBM models as skl2onnx and onnxmltools convert them, served by a
 * real server: ZipMap probabilities, int and string labels, text/csv as SageMaker's XGBoost users
 * send it, model metadata, refusals at load, external data. Expected outputs come from the TS
 * reference evaluators, never from onnxruntime.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tgz } from '../../harness/tar-archives';
import {
  externalDataClassifier,
  externalLinearProbabilities,
  futureOpsetModel,
  labelEncoderModel,
  linearClassifierModel,
  linearProbabilities,
  sequenceOutputModel,
  treeClassifierModel,
  treeRegressorModel,
  unknownOperatorModel,
  type ClassLabels,
  type ExternalLinear,
  type LinearSpec,
} from '../fixtures/onnx-ml-models';
import { writeModelDir } from '../../harness/onnx-models';
import { classify, regress, type TreeEnsemble } from '../fixtures/tree-ensemble-reference';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { assertRowsClose } from '../helpers/assert-close';

const kBeyond53 = 9007199254740993n; // 2^53 + 1: a float64 would read it as 2^53

/**
 * skl2onnx's binary RandomForest layout: two trees averaged (weights halved), one column holding
 * P(class 1). By hand, row [0, 0, 0]: 0.9/2 + 0.7/2 = 0.8 → [0.2, 0.8], label 2^53+1;
 * row [1, 2, -2]: 0.6/2 + 0.1/2 = 0.35 → [0.65, 0.35], label 10.
 */
const kForest: TreeEnsemble = {
  postTransform: 'NONE',
  trees: [
    {
      feature: 0,
      threshold: 0.5,
      yes: { feature: 1, threshold: 1.5, yes: { votes: [[0, 0.45]] }, no: { votes: [[0, 0.1]] } },
      no: { votes: [[0, 0.3]] },
    },
    { feature: 2, threshold: -1, yes: { votes: [[0, 0.05]] }, no: { votes: [[0, 0.35]] } },
  ],
};
const kForestLabels = [10n, kBeyond53] as const;

/** onnxmltools' binary XGBoost layout: margins in one column, a base score, LOGISTIC. */
const kXgbBinary: TreeEnsemble = {
  postTransform: 'LOGISTIC',
  baseValues: [0.25],
  trees: [
    { feature: 0, threshold: 0, yes: { votes: [[0, -0.4]] }, no: { votes: [[0, 0.8]] } },
    { feature: 1, threshold: 0.5, yes: { votes: [[0, 0.3]] }, no: { votes: [[0, -0.6]] } },
  ],
};

/** Multi-class boosting: one tree per class per round, SOFTMAX over the summed margins. */
const kXgbMulti: TreeEnsemble = {
  postTransform: 'SOFTMAX',
  baseValues: [0.5, 0.5, 0.5],
  trees: [0, 1, 2].flatMap((k) => [
    {
      feature: k % 2,
      threshold: 0.25 * k,
      yes: { votes: [[k, 0.2 * (k + 1)]] as Array<[number, number]> },
      no: { votes: [[k, -0.3]] as Array<[number, number]> },
    },
    {
      feature: (k + 1) % 2,
      threshold: -0.5,
      yes: { votes: [[k, -0.1 * k]] as Array<[number, number]> },
      no: { votes: [[k, 0.15]] as Array<[number, number]> },
    },
  ]),
};

const kRegressor: TreeEnsemble = {
  postTransform: 'NONE',
  trees: [
    {
      feature: 0,
      threshold: 1,
      yes: { votes: [[0, 10]] },
      no: { feature: 1, threshold: 0, yes: { votes: [[0, 20]] }, no: { votes: [[0, 30]] } },
    },
    { feature: 1, threshold: 5, yes: { votes: [[0, 1]] }, no: { votes: [[0, 3]] } },
  ],
};

const kLinear: LinearSpec = {
  offset: [1, -2, 0.5],
  scale: [0.5, 2, 1],
  coefficients: [
    [1, -0.5, 0.25],
    [-1, 0.75, 0.5],
    [0.2, 0.1, -1],
  ],
  intercepts: [0.1, -0.2, 0.3],
  labels: [0n, 1n, 2n],
};

const kExternal: ExternalLinear = {
  weights: [
    [0.5, -1],
    [2, 0.25],
    [-0.75, 1.5],
  ],
  bias: [0.1, -0.1],
};

const kRows2 = [
  [0, 0],
  [1, 1],
  [-1, 2],
  [0.3, -0.7],
];
const kRows3 = [
  [0, 0, 0],
  [1, 2, -2],
  [0.5, 1.5, -1],
  [-3, 4, 7],
];

/** JSON keys of a label: int64 labels in decimal, exact past 2^53. */
const key = (label: bigint | string) => String(label);
/** A label as the JSON answer carries it: a number when exact, else its decimal string. */
const jsonLabel = (label: bigint | string) =>
  typeof label === 'bigint' && label <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(label) : String(label);

function expectedRows(ensemble: TreeEnsemble, labels: ClassLabels, rows: number[][]) {
  return rows.map((row) => classify<bigint | string>(ensemble, labels as ReadonlyArray<bigint | string>, row));
}

function assertProbabilityObjects(
  actual: Array<Record<string, number>>,
  expected: number[][],
  labels: ClassLabels,
): void {
  assert.equal(actual.length, expected.length);
  actual.forEach((obj, r) => {
    assert.deepEqual(Object.keys(obj), labels.map(key), `row ${r} keys`);
    labels.forEach((label, c) =>
      assert.ok(
        Math.abs(obj[key(label)] - expected[r][c]) < 1e-6,
        `row ${r} class ${key(label)}: ${obj[key(label)]} vs ${expected[r][c]}`,
      ),
    );
  });
}

/** The converters' float32 arithmetic against the float64 references: tree and linear outputs agree to 1e-6. */
const assertCloseRows = (actual: unknown, expected: number[][]) => assertRowsClose(actual, expected, 'output', 1e-6);

const csv = (rows: number[][]) => rows.map((r) => r.join(',')).join('\n') + '\n';
const csvNumbers = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => line.split(',').map(Number));

async function post(t: TestServer, model: string, body: string, headers: Record<string, string>) {
  return request(`${t.url}/models/${model}/invoke`, { method: 'POST', body, headers });
}

describe('scikit-learn, XGBoost and LightGBM models as skl2onnx / onnxmltools convert them', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
    const models: Record<string, Uint8Array> = {
      'rf-binary': treeClassifierModel({
        ensemble: kForest,
        labels: kForestLabels,
        features: 3,
        metadataProps: { customer: 'acme', trained: '2026-11-30' },
      }),
      'xgb-binary': treeClassifierModel({ ensemble: kXgbBinary, labels: ['no', 'yes'], features: 2 }),
      'xgb-multi': treeClassifierModel({ ensemble: kXgbMulti, labels: ['bird', 'cat', 'dog'], features: 2 }),
      'rf-regressor': treeRegressorModel(kRegressor, 2),
      linear: linearClassifierModel(kLinear),
      vocabulary: labelEncoderModel(['the', 'cat', 'sat']),
    };
    const loads = await Promise.all(
      Object.entries(models).map(([name, bytes]) => loadModel(t, name, writeModelDir(t.store, name, bytes))),
    );
    for (const r of loads) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  describe('a binary RandomForest with int64 labels (one beyond 2^53)', () => {
    const expected = expectedRows(kForest, kForestLabels, kRows3);

    it('matches the hand-checked rows', () => {
      assert.deepEqual(
        expected.slice(0, 2).map((e) => e.label),
        [kBeyond53, 10n],
      );
      assertCloseRows(
        expected.slice(0, 2).map((e) => e.probabilities),
        [
          [0.2, 0.8],
          [0.65, 0.35],
        ],
      );
    });

    it('answers JSON with exact labels and one {label: probability} object per row', async () => {
      const res = await post(t, 'rf-binary', JSON.stringify({ inputs: { input: kRows3 } }), {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.outputs.output_label,
        expected.map((e) => jsonLabel(e.label)),
      );
      assert.match(res.text, /"output_label":\["9007199254740993",10,/);
      assertProbabilityObjects(
        res.body.outputs.output_probability,
        expected.map((e) => e.probabilities),
        kForestLabels,
      );
    });

    it('answers {"instances"} with one object per row holding both outputs', async () => {
      const res = await post(t, 'rf-binary', JSON.stringify({ instances: kRows3.slice(0, 2) }), {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body.predictions[0]), ['output_label', 'output_probability']);
      assert.deepEqual(
        res.body.predictions.map((p: { output_label: unknown }) => p.output_label),
        ['9007199254740993', 10],
      );
    });

    it('answers CSV rows with the positive-class probability per line, or the label, or both probabilities, as Accept asks', async () => {
      const body = csv(kRows3);
      const positive = await post(t, 'rf-binary', body, { 'content-type': 'text/csv', accept: 'text/csv' });
      assert.equal(positive.status, 200, positive.text);
      assert.match(positive.headers.get('content-type') ?? '', /^text\/csv/);
      assertCloseRows(
        csvNumbers(positive.text),
        expected.map((e) => [e.probabilities[1]]),
      );
      const labels = await post(t, 'rf-binary', body, { 'content-type': 'text/csv', accept: 'text/csv; output=label' });
      assert.equal(labels.text, expected.map((e) => `${e.label}\n`).join(''));
      const both = await post(t, 'rf-binary', body, {
        'content-type': 'text/csv',
        accept: 'text/csv;output=probabilities',
      });
      assertCloseRows(
        csvNumbers(both.text),
        expected.map((e) => e.probabilities),
      );
    });
  });

  describe('a binary XGBoost with string labels', () => {
    const expected = expectedRows(kXgbBinary, ['no', 'yes'], kRows2);

    it('answers a bare JSON array with string labels and probability objects', async () => {
      const res = await post(t, 'xgb-binary', JSON.stringify(kRows2), { 'content-type': 'application/json' });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.output_label,
        expected.map((e) => e.label),
      );
      assertProbabilityObjects(
        res.body.output_probability,
        expected.map((e) => e.probabilities),
        ['no', 'yes'],
      );
    });

    it("answers CSV with P(yes) per line, as SageMaker's XGBoost container does for binary:logistic", async () => {
      const res = await post(t, 'xgb-binary', csv(kRows2), { 'content-type': 'text/csv', accept: 'text/csv' });
      assert.equal(res.status, 200, res.text);
      assertCloseRows(
        csvNumbers(res.text),
        expected.map((e) => [e.probabilities[1]]),
      );
    });
  });

  describe('a multi-class boosted ensemble with string labels', () => {
    const labels = ['bird', 'cat', 'dog'];
    const expected = expectedRows(kXgbMulti, labels, kRows2);

    it('answers JSON probability objects keyed by class name', async () => {
      const res = await post(t, 'xgb-multi', JSON.stringify({ inputs: { input: kRows2 } }), {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.outputs.output_label,
        expected.map((e) => e.label),
      );
      assertProbabilityObjects(
        res.body.outputs.output_probability,
        expected.map((e) => e.probabilities),
        labels,
      );
    });

    it('answers CSV with every class probability per line, or the label; a positive class is refused with 406', async () => {
      const all = await post(t, 'xgb-multi', csv(kRows2), { 'content-type': 'text/csv', accept: 'text/csv' });
      assertCloseRows(
        csvNumbers(all.text),
        expected.map((e) => e.probabilities),
      );
      const label = await post(t, 'xgb-multi', csv(kRows2), {
        'content-type': 'text/csv',
        accept: 'text/csv;output=label',
      });
      assert.equal(label.text, expected.map((e) => `${e.label}\n`).join(''));
      const refused = await post(t, 'xgb-multi', csv(kRows2), {
        'content-type': 'text/csv',
        accept: 'text/csv;output=probability',
      });
      assert.equal(refused.status, 406);
      assert.equal(refused.body.errorCode, 'MME_ERR_NOT_ACCEPTABLE');
      assert.match(refused.body.message, /3 classes; ask for output=probabilities or output=label/);
    });
  });

  describe('a StandardScaler + LogisticRegression pipeline (Scaler → LinearClassifier, int labels)', () => {
    const expected = kRows3.map((row) => linearProbabilities(kLinear, row));

    it('answers JSON probability objects matching the reference softmax', async () => {
      const res = await post(t, 'linear', JSON.stringify({ inputs: { input: kRows3 } }), {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assertProbabilityObjects(res.body.outputs.output_probability, expected, kLinear.labels);
      assert.deepEqual(
        res.body.outputs.output_label,
        expected.map((p) => p.indexOf(Math.max(...p))),
      );
    });

    it('answers the Open Inference Protocol with the [rows, classes] tensor and its class labels', async () => {
      const res = await post(
        t,
        'linear',
        JSON.stringify({ inputs: [{ name: 'input', shape: [4, 3], datatype: 'FP32', data: kRows3.flat() }] }),
        { 'content-type': 'application/json' },
      );
      assert.equal(res.status, 200, res.text);
      const probs = res.body.outputs.find((o: { name: string }) => o.name === 'output_probability');
      assert.deepEqual([probs.shape, probs.datatype, probs.parameters], [[4, 3], 'FP32', { class_labels: [0, 1, 2] }]);
      assertCloseRows([probs.data], [expected.flat()]);
    });
  });

  describe('a RandomForest regressor and other plain tensor models', () => {
    const expected = kRows2.map((row) => regress(kRegressor, 1, 'AVERAGE', row));

    it('answers JSON and CSV as before', async () => {
      const json = await post(t, 'rf-regressor', JSON.stringify({ inputs: { input: kRows2 } }), {
        'content-type': 'application/json',
      });
      assert.equal(json.status, 200, json.text);
      assertCloseRows(json.body.outputs.variable, expected);
      const text = await post(t, 'rf-regressor', csv(kRows2), { 'content-type': 'text/csv', accept: 'text/csv' });
      assertCloseRows(csvNumbers(text.text), expected);
    });

    it('refuses text/csv;output=label for a model that is not a classifier', async () => {
      const res = await post(t, 'rf-regressor', csv(kRows2), {
        'content-type': 'text/csv',
        accept: 'text/csv;output=label',
      });
      assert.equal(res.status, 406);
      assert.match(res.body.message, /needs a classifier whose probabilities come out of a ZipMap/);
    });

    it('takes string tensors in: a LabelEncoder vocabulary lookup', async () => {
      const res = await post(t, 'vocabulary', JSON.stringify({ inputs: { text: ['cat', 'dog', 'the'] } }), {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.outputs.id, [1, -1, 0]);
    });
  });

  it("describes a ZipMap output with its real type and class labels, and the model's producer and metadata_props", async () => {
    const res = await request(`${t.managementUrl}/models/rf-binary`);
    assert.equal(res.status, 200, res.text);
    const d = res.body;
    assert.deepEqual(d.outputs, [
      { name: 'output_label', type: 'int64', shape: ['N'] },
      {
        name: 'output_probability',
        type: 'seq(map(int64,tensor(float)))',
        shape: [],
        classLabels: [10, '9007199254740993'],
        tensor: { type: 'float32', shape: ['N', 2] },
      },
    ]);
    assert.equal(d.metadata.producerName, 'skl2onnx');
    assert.equal(d.metadata.producerVersion, '1.17.0');
    assert.deepEqual(d.metadata.opsets, { 'ai.onnx': 13, 'ai.onnx.ml': 3 });
    assert.deepEqual(d.metadata.metadataProps, { customer: 'acme', trained: '2026-11-30' });
  });

  describe('models this server or this onnxruntime cannot run are refused at load with 400', () => {
    const refusals: Array<[string, () => Uint8Array, RegExp]> = [
      [
        'an opset newer than onnxruntime knows',
        () => futureOpsetModel(99),
        /imports opset 99 of ai\.onnx, but onnxruntime \S+ supports ai\.onnx opsets 1 to \d+, ai\.onnx\.ml opsets 1 to \d+; .*target_opset=\{'': \d+, 'ai\.onnx\.ml': \d+\}/,
      ],
      [
        'an operator onnxruntime does not have',
        () => unknownOperatorModel('FrobnicateTensor'),
        /uses operator FrobnicateTensor of ai\.onnx opset 13.*supports ai\.onnx opsets 1 to \d+/,
      ],
      [
        'a sequence output that no ZipMap makes',
        () => sequenceOutputModel(),
        /output "pair" is a seq\(tensor\(float\)\) made by "SequenceConstruct"; onnxruntime-node returns tensors only/,
      ],
      [
        'the same with a 10 000-character output name, quoted to 100 of them',
        () => sequenceOutputModel('o'.repeat(10_000)),
        /^output "o{100}"… \(10000 characters\) is a seq\(tensor\(float\)\) made by "SequenceConstruct"; [^"]*$/,
      ],
    ];
    for (const [what, build, message] of refusals) {
      it(what, async () => {
        const name = what.replace(/\W+/g, '-');
        const res = await loadModel(t, name, writeModelDir(t.store, name, build()));
        assert.equal(res.status, 400, res.text);
        assert.equal(res.body.errorCode, 'MME_ERR_INVALID_MODEL');
        assert.match(res.body.message, message);
        assert.doesNotMatch(res.body.message, /onnxruntime_src|\.cc:|\.h:/);
      });
    }
  });

  describe('a ZipMap classifier whose weights sit in two external data files', () => {
    const rows = [
      [1, 0, -1],
      [0.5, 2, 0],
    ];
    const expected = rows.map((row) => externalLinearProbabilities(kExternal, row));
    const { model, files } = externalDataClassifier(kExternal);

    async function loadAndInvoke(name: string, url: string): Promise<void> {
      const loaded = await loadModel(t, name, url);
      assert.equal(loaded.status, 200, loaded.text);
      const res = await post(t, name, JSON.stringify({ inputs: { input: rows } }), {
        'content-type': 'application/json',
      });
      assert.equal(res.status, 200, res.text);
      assertProbabilityObjects(res.body.outputs.output_probability, expected, [0n, 1n]);
    }

    it('loads from a directory', async () => {
      await loadAndInvoke('external-dir', writeModelDir(t.store, 'external-dir', model, files));
    });

    it('loads from a .tar.gz', async () => {
      const archive = path.join(t.store, 'external-tgz.tar.gz');
      fs.writeFileSync(
        archive,
        tgz([
          { path: 'model.onnx', data: model },
          { path: 'weights/', type: 'Directory' },
          ...Object.entries(files).map(([p, data]) => ({ path: p, data })),
        ]),
      );
      await loadAndInvoke('external-tgz', archive);
    });

    it('still refuses external data that escapes the model directory', async () => {
      const escaping = externalDataClassifier(kExternal, '../w.bin');
      const dir = writeModelDir(t.store, 'external-escape', escaping.model, { 'b.bin': escaping.files['b.bin'] });
      fs.writeFileSync(path.join(t.store, 'w.bin'), escaping.files['../w.bin']);
      const res = await loadModel(t, 'external-escape', dir);
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.message, /escapes model directory/);
    });
  });
});
