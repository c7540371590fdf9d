import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import type { TensorInfo } from '../../src/model-types';
import { classifierCsvColumns, probabilityRows } from '../../src/worker-process/classifier-answers';
import type { PlainTensor } from '../../src/worker-process/tensor';

const label: TensorInfo = { name: 'output_label', type: 'tensor(int64)', shape: ['N'] };
function probabilityInfo(classLabels: Array<number | string>): TensorInfo {
  return { name: 'output_probability', type: 'seq(map(int64,tensor(float)))', shape: ['N'], classLabels };
}
const kLabels: PlainTensor = { type: 'int64', dims: [2], data: BigInt64Array.from([1n, 0n]) };
const kBinary: PlainTensor = { type: 'float32', dims: [2, 2], data: Float32Array.from([0.25, 0.75, 0.875, 0.125]) };
const kThree: PlainTensor = { type: 'float32', dims: [1, 3], data: Float32Array.from([0.5, 0.25, 0.25]) };

function notAcceptable(message: RegExp) {
  return (err: unknown) => {
    assert.ok(isMmeError(err));
    assert.equal(err.code, 'MME_ERR_NOT_ACCEPTABLE');
    assert.match(err.message, message);
    return true;
  };
}

describe('classifier-answers: ZipMap probabilities in JSON and text/csv', () => {
  it('gives one {label: probability} object per row, keyed by the class labels in column order', () => {
    assert.deepEqual(probabilityRows(kBinary, [0, 1]), [
      { 0: 0.25, 1: 0.75 },
      { 0: 0.875, 1: 0.125 },
    ]);
    assert.deepEqual(probabilityRows(kThree, ['cat', 'dog', '18446744073709551615']), [
      { cat: 0.5, dog: 0.25, '18446744073709551615': 0.25 },
    ]);
    assert.deepEqual(probabilityRows({ ...kThree, dims: [0, 3], data: new Float32Array(0) }, ['a', 'b', 'c']), []);
  });

  it("answers a binary classifier's csv with its positive-class column, as SageMaker's XGBoost does", () => {
    const outputs = { output_label: kLabels, output_probability: kBinary };
    const infos = [label, probabilityInfo([0, 1])];
    for (const accept of ['text/csv', 'text/csv;output=probability']) {
      const t = classifierCsvColumns(outputs, infos, accept);
      assert.deepEqual(t, { type: 'float32', dims: [2], data: Float32Array.from([0.75, 0.125]) }, accept);
    }
    assert.equal(classifierCsvColumns(outputs, infos, 'text/csv;output=probabilities'), kBinary);
    assert.equal(classifierCsvColumns(outputs, infos, 'text/csv;output=label'), kLabels);
  });

  it('answers every class of a multi-class classifier, and refuses the one probability it does not have', () => {
    const outputs = { output_label: kLabels, output_probability: kThree };
    const infos = [label, probabilityInfo([0, 1, 2])];
    assert.equal(classifierCsvColumns(outputs, infos, 'text/csv'), kThree);
    assert.throws(
      () => classifierCsvColumns(outputs, infos, 'text/csv;output=probability'),
      notAcceptable(/binary classifier, and this one has 3 classes; ask for output=probabilities or output=label$/),
    );
  });

  it('refuses an unknown output parameter and a label when there is none', () => {
    assert.throws(
      () => classifierCsvColumns({ output_probability: kBinary }, [probabilityInfo([0, 1])], 'text/csv;output=margin'),
      notAcceptable(/^Accept text\/csv;output=margin is not one of label, probabilities, probability$/),
    );
    assert.throws(
      () => classifierCsvColumns({ output_probability: kBinary }, [probabilityInfo([0, 1])], 'text/csv;output=label'),
      notAcceptable(/needs a label output, and this model has only output_probability$/),
    );
  });

  it('leaves a model that is no ZipMap classifier to the plain csv answer, unless output= was asked', () => {
    const plain: TensorInfo = { name: 'y', type: 'tensor(float)', shape: ['N'] };
    assert.equal(classifierCsvColumns({ y: kThree }, [plain], 'text/csv'), null);
    const infos = [label, plain, probabilityInfo([0, 1])];
    assert.equal(classifierCsvColumns({}, infos, 'text/csv'), null);
    assert.throws(
      () => classifierCsvColumns({ y: kThree }, [plain], 'text/csv;output=label'),
      notAcceptable(/needs a classifier whose probabilities come out of a ZipMap .* this model's outputs are y$/),
    );
  });
});
