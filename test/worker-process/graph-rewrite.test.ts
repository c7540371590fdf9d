/**
 * zipMapsAsTensors against onnxruntime itself: the rewritten bytes of a real skl2onnx-shaped
 * classifier load, keep every name, and answer the probabilities the ZipMap would have held.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { zipMapsAsTensors } from '../../src/worker-process/graph-rewrite';
import { readOnnxFile } from '../../src/worker-process/onnx-file';
import { zipMapOutputs } from '../../src/worker-process/served-outputs';
import { type LinearSpec, linearClassifierModel, linearProbabilities } from '../fixtures/onnx-ml-models';

const kSpec: LinearSpec = {
  offset: [1, -2],
  scale: [0.5, 2],
  coefficients: [
    [1, -1],
    [0.5, 2],
    [-1.5, 0.25],
  ],
  intercepts: [0.1, -0.2, 0.3],
  labels: [3n, 7n, 11n],
};

describe('graph-rewrite: ZipMap outputs served as their tensor', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'graph-rewrite-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('turns each ZipMap into an Identity with a [N, classes] float output, leaving the rest as it was', async () => {
    const file = path.join(dir, 'linear.onnx');
    writeFileSync(file, linearClassifierModel(kSpec));
    const model = readOnnxFile(file);
    const zipMaps = zipMapOutputs(model);
    assert.equal(zipMaps.length, 1);

    const rewritten = path.join(dir, 'rewritten.onnx');
    writeFileSync(rewritten, zipMapsAsTensors(file, model, zipMaps));
    const after = readOnnxFile(rewritten);
    assert.deepEqual(
      after.nodes.map((n) => [n.name, n.opType, n.domain, n.input, n.output]),
      model.nodes.map((n) => [
        n.name,
        n.opType === 'ZipMap' ? 'Identity' : n.opType,
        n.opType === 'ZipMap' ? '' : n.domain,
        n.input,
        n.output,
      ]),
    );
    assert.deepEqual(
      after.outputs.map((o) => [o.name, o.tensor]),
      [
        ['output_label', true],
        ['output_probability', true],
      ],
    );
    assert.deepEqual([...after.opsets], [...model.opsets]);
    assert.equal(after.producerName, model.producerName);

    const session = await ort.InferenceSession.create(rewritten, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    try {
      assert.deepEqual(session.outputNames, ['output_label', 'output_probability']);
      const rows = [
        [0.5, 1.5],
        [-3, 4],
      ];
      const out = await session.run({ input: new ort.Tensor('float32', Float32Array.from(rows.flat()), [2, 2]) });
      const p = out.output_probability;
      assert.equal(p.type, 'float32');
      assert.deepEqual(p.dims, [2, 3]);
      const expected = rows.flatMap((row) => linearProbabilities(kSpec, row));
      (p.data as Float32Array).forEach((v, i) => assert.ok(Math.abs(v - expected[i]) < 1e-5, `${v} vs ${expected[i]}`));
      assert.deepEqual(
        [...(out.output_label.data as BigInt64Array)],
        rows.map((row) => {
          const probs = linearProbabilities(kSpec, row);
          return kSpec.labels[probs.indexOf(Math.max(...probs))];
        }),
      );
    } finally {
      await session.release();
    }
  });
});
