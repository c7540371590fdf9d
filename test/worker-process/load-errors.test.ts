/** The advice for onnxruntime's real load failures: each model below is refused by onnxruntime itself. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { onnx } from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import { encodeModel, identityModel, tensorInfo } from '../../harness/onnx-models';
import { explainLoadFailure, unparsedModel } from '../../src/worker-process/load-errors';
import { readOnnxFile } from '../../src/worker-process/onnx-file';
import { maxSupportedOpset } from '../../src/worker-process/opset-support';
import { futureOpsetModel, unknownOperatorModel } from '../fixtures/onnx-ml-models';

describe('load-errors: why onnxruntime refused a model', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'load-errors-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes the model, has onnxruntime refuse it, and explains the refusal. */
  async function explain(name: string, bytes: Uint8Array) {
    const file = path.join(dir, name);
    writeFileSync(file, bytes);
    let message = '';
    try {
      await (await ort.InferenceSession.create(file, { logSeverityLevel: 3 })).release();
    } catch (err) {
      message = (err as Error).message;
    }
    assert.notEqual(message, '', `onnxruntime loaded ${name}`);
    return explainLoadFailure(message, readOnnxFile(file));
  }

  it('names an opset past the supported range, with the range and a target_opset to convert with', async () => {
    const max = await maxSupportedOpset('');
    const ml = await maxSupportedOpset('ai.onnx.ml');
    const err = await explain('future.onnx', futureOpsetModel(max + 1));
    assert.equal(err?.code, 'MME_ERR_INVALID_MODEL');
    assert.match(
      err.message,
      new RegExp(
        `^the model imports opset ${max + 1} of ai\\.onnx, but onnxruntime [\\d.]+ supports ai\\.onnx opsets 1 to ${max}, ai\\.onnx\\.ml opsets 1 to ${ml}; .* target_opset=\\{'': ${max}, 'ai\\.onnx\\.ml': ${ml}\\}$`,
      ),
    );
  });

  it('names an operator onnxruntime does not have, and the custom domain it would need', async () => {
    const err = await explain('mystery.onnx', unknownOperatorModel('Mystery'));
    assert.match(
      err?.message ?? '',
      /^the model uses operator Mystery of ai\.onnx opset 13, which onnxruntime [\d.]+ does not have \(it supports ai\.onnx opsets 1 to \d+, ai\.onnx\.ml opsets 1 to \d+\); convert/,
    );
    const custom = encodeModel({
      name: 'custom',
      opsets: [
        { domain: '', version: 13 },
        { domain: 'com.example', version: 1 },
      ],
      nodes: [{ opType: 'Fancy', name: 'fancy', domain: 'com.example', input: ['x'], output: ['y'] }],
      inputs: [tensorInfo('x', 'float32', ['N'])],
      outputs: [tensorInfo('y', 'float32', ['N'])],
    });
    const customErr = await explain('custom.onnx', custom);
    assert.match(
      customErr?.message ?? '',
      /^the model uses operator Fancy of com\.example opset 1, .*, and no custom operator library for com\.example is loaded\); /,
    );
  });

  it('names an IR version past what this build reads', async () => {
    const model = onnx.ModelProto.decode(identityModel('float32'));
    model.irVersion = 99;
    const err = await explain('ir.onnx', onnx.ModelProto.encode(model).finish());
    assert.match(
      err?.message ?? '',
      /^the model has IR version 99, but onnxruntime [\d.]+ reads IR versions up to \d+; convert it again/,
    );
  });

  it('leaves a failure it does not recognise to the caller', async () => {
    const file = path.join(dir, 'plain.onnx');
    writeFileSync(file, identityModel('float32'));
    assert.equal(await explainLoadFailure('something else went wrong', readOnnxFile(file)), null);
  });

  it('tells a Git LFS pointer, an empty file and a damaged file apart', () => {
    const ortMessage = 'Load model from /x failed:Protobuf parsing failed.';
    const cases: Array<[string, string | Buffer, RegExp]> = [
      [
        'lfs.onnx',
        'version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n',
        /^onnxruntime could not read lfs\.onnx \(Protobuf parsing failed\.\): it is a Git LFS pointer \(67 bytes\), not the model: fetch the file itself \(git lfs pull\)/,
      ],
      [
        'empty.onnx',
        '',
        /^onnxruntime could not read empty\.onnx \(Protobuf parsing failed\.\): it is empty: copy or download/,
      ],
      [
        'cut.onnx',
        Buffer.from(identityModel('float32')).subarray(0, 20),
        /^onnxruntime could not read cut\.onnx \(Protobuf parsing failed\.\): check that it is whole \(20 bytes here/,
      ],
    ];
    for (const [name, content, expected] of cases) {
      const file = path.join(dir, name);
      writeFileSync(file, content);
      const err = unparsedModel(file, ortMessage);
      assert.equal(err.code, 'MME_ERR_INVALID_MODEL');
      assert.match(err.message, expected);
    }
    assert.match(
      unparsedModel(path.join(dir, 'gone.onnx'), 'no reason given').message,
      /^onnxruntime could not read gone\.onnx \(it could not parse the file\): it is empty: copy or download/,
    );
  });
});
