import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { addModel, identityModel } from '../fixtures/onnx-models';
import { tarBytes } from '../artifacts/helpers';
import { invoke, request, startServer, tempDir, type TestServer } from '../helpers/server';
import { kS3Env, LocalS3, setEnv } from './local-s3';

const kInput = { inputs: { x: [Array(16).fill(0)] } };

describe('model_repository: on-demand loads from S3', function () {
  let s3: LocalS3;
  let restoreEnv: () => void;
  let t: TestServer;

  before(async () => {
    restoreEnv = setEnv(kS3Env);
    s3 = await LocalS3.start();
    t = await startServer(s3.properties('repo', `model_cache_dir=${tempDir('mme-disk-cache-')}`));
  });
  after(async () => {
    await t?.close();
    await s3?.close();
    restoreEnv();
  });

  it('loads a model from a directory prefix on its first invoke', async () => {
    await s3.putModelDir('repo', 'dir-model', addModel());
    const res = await invoke(t, 'dir-model', kInput);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.outputs.y, [Array(16).fill(1)]);
    const described = await request(`${t.managementUrl}/models/dir-model`);
    assert.match(JSON.stringify(described.body), /s3:\/\/models\/repo\/dir-model/);
  });

  it('loads a model from a .tar.gz', async () => {
    await s3.put('repo/tgz-model.tar.gz', gzipSync(tarBytes([{ path: 'model.onnx', data: identityModel('float32') }])));
    const res = await invoke(t, 'tgz-model', kInput);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.outputs.y, [Array(16).fill(0)]);
  });
});
