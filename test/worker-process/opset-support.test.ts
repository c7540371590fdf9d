/** The opset ceiling found by asking onnxruntime, checked by asking it again at and past the ceiling. */
import assert from 'node:assert/strict';
import * as ort from 'onnxruntime-node';
import { domainName, maxSupportedOpset } from '../../src/worker-process/opset-support';
import { encodeModel, tensorInfo } from '../../harness/onnx-models';
import { futureOpsetModel } from '../fixtures/onnx-ml-models';

/** y = Identity(x) importing ai.onnx 13 and ai.onnx.ml at `version`. */
function mlOpsetModel(version: number): Uint8Array {
  return encodeModel({
    name: 'ml_opset',
    opsets: [
      { domain: '', version: 13 },
      { domain: 'ai.onnx.ml', version },
    ],
    nodes: [{ opType: 'Identity', name: 'identity', input: ['x'], output: ['y'] }],
    inputs: [tensorInfo('x', 'float32', ['N'])],
    outputs: [tensorInfo('y', 'float32', ['N'])],
  });
}

async function loads(bytes: Uint8Array): Promise<boolean> {
  try {
    await (await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 })).release();
    return true;
  } catch {
    return false;
  }
}

describe('opset-support: the opsets this onnxruntime build loads', () => {
  it('finds the highest ai.onnx opset: a model importing it loads, one version more does not', async () => {
    const max = await maxSupportedOpset('');
    assert.ok(max >= 13, `ai.onnx max ${max}`);
    assert.equal(await loads(futureOpsetModel(max)), true);
    assert.equal(await loads(futureOpsetModel(max + 1)), false);
  });

  it('finds an ai.onnx.ml ceiling, and asks onnxruntime once per domain', async () => {
    const first = maxSupportedOpset('ai.onnx.ml');
    assert.equal(maxSupportedOpset('ai.onnx.ml'), first);
    const max = await first;
    assert.equal(await loads(mlOpsetModel(max)), true);
    assert.equal(await loads(mlOpsetModel(max + 1)), false);
  });

  it('names the default domain ai.onnx', () => {
    assert.equal(domainName(''), 'ai.onnx');
    assert.equal(domainName('ai.onnx.ml'), 'ai.onnx.ml');
  });
});
