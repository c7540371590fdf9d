/**
 * src/gateway/oip/model-metadata.ts: what OIP metadata answers. One version, "1" (another is a 404
 * naming it), v2 datatypes, symbolic dimensions as -1, a ZipMap output as its [rows, classes] tensor.
 */
import assert from 'node:assert/strict';
import { checkVersion, modelMetadata, serverMetadata } from '../../../src/gateway/oip/model-metadata';
import type { ModelRegistry } from '../../../src/server/models/registry';
import type { TensorInfo } from '../../../src/model-types';
import { throwsMme } from '../../helpers/throws-mme';

const inputs: TensorInfo[] = [{ name: 'x', type: 'float32', shape: ['batch', 16] }];
const outputs: TensorInfo[] = [
  { name: 'label', type: 'int64', shape: [-1] },
  {
    name: 'probabilities',
    type: 'seq(map(int64,tensor(float)))',
    shape: [],
    classLabels: [0, 1],
    tensor: { type: 'float32', shape: ['N', 2] },
  },
];
const registry = { get: () => ({ inputs, outputs }) } as unknown as ModelRegistry;

describe('gateway/oip/model-metadata: OIP metadata', () => {
  it("describes a model's tensors in v2 datatypes, symbolic dimensions as -1, a ZipMap as its tensor", () => {
    assert.deepEqual(modelMetadata(registry, 'm'), {
      name: 'm',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 16] }],
      outputs: [
        { name: 'label', datatype: 'INT64', shape: [-1] },
        { name: 'probabilities', datatype: 'FP32', shape: [-1, 2] },
      ],
    });
    assert.deepEqual(modelMetadata(registry, 'm', '1').versions, ['1']);
  });

  it('knows one version: another is a 404 naming it, quoted', () => {
    checkVersion('m', undefined);
    checkVersion('m', '');
    throwsMme(
      () => modelMetadata(registry, 'm', '2'),
      'MME_ERR_MODEL_NOT_FOUND',
      /^Model "m" has no version "2"; its only version is 1 \(or leave the version out\)\.$/,
    );
  });

  it('names the binary tensor extension, in a fresh list each time', () => {
    const a = serverMetadata();
    assert.deepEqual(a.extensions, ['binary_tensor_data']);
    a.extensions.push('x');
    assert.deepEqual(serverMetadata().extensions, ['binary_tensor_data']);
  });
});
