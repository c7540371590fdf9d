import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { resolveModelDir } from '../../src/artifacts/model-dir';
import { syncReads } from '../../src/artifacts/dir-reads';
import { assertMmeError, useTempDir } from './helpers';

describe('model-dir: which .onnx file and handler a model directory serves', () => {
  const tmp = useTempDir('model-dir-');

  function put(rel: string, content = 'x'): string {
    const file = path.join(tmp(), rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
    return file;
  }

  it('serves the only .onnx file, with its size, no handler and an empty config', async () => {
    const onnx = put('net.ONNX', 'abcd');
    const dir = await resolveModelDir(tmp(), 'u');
    assert.deepEqual(dir, { dir: tmp(), onnxPath: onnx, onnxBytes: 4, handlerPath: null, modelConfig: {} });
  });

  it('prefers model.onnx among several, and names them all when it cannot choose', async () => {
    put('a.onnx');
    put('b.onnx');
    await assertMmeError(
      resolveModelDir(tmp(), 's3://b/m.tar.gz'),
      'MME_ERR_INVALID_MODEL',
      /^s3:\/\/b\/m\.tar\.gz holds several \.onnx files and none is named model\.onnx: a\.onnx, b\.onnx$/,
    );
    const preferred = put('model.onnx');
    assert.equal((await resolveModelDir(tmp(), 'u')).onnxPath, preferred);
  });

  it('looks one directory down when the top level has none, skipping dot-files, and no deeper', async () => {
    put('._model.onnx');
    put('deep/er/model.onnx');
    await assertMmeError(resolveModelDir(tmp(), 'u'), 'MME_ERR_INVALID_MODEL', /^u must hold a \.onnx file/);
    const nested = put('sub/model.onnx');
    put('sub/handler.js');
    const dir = await resolveModelDir(tmp(), 'u', undefined, syncReads);
    assert.equal(dir.onnxPath, nested);
    assert.equal(dir.dir, path.join(tmp(), 'sub'));
    assert.equal(dir.handlerPath, path.join(tmp(), 'sub', 'handler.js'));
  });

  it('lists at most ten names of an ambiguous directory', async () => {
    for (let i = 0; i < 12; i++) put(`sub${String(i).padStart(2, '0')}/m.onnx`);
    await assertMmeError(
      resolveModelDir(tmp(), 'u'),
      'MME_ERR_INVALID_MODEL',
      /: sub00\/m\.onnx, .*, sub09\/m\.onnx, \.\.\. \(12 in all\)$/,
    );
  });

  it('refuses an empty model and a symbolic link in place of one', async () => {
    put('model.onnx', '');
    await assertMmeError(resolveModelDir(tmp(), 'u'), 'MME_ERR_INVALID_MODEL', /^model\.onnx in u is empty$/);
    symlinkSync(put('elsewhere/real.bin'), path.join(tmp(), 'link.onnx'));
    await assertMmeError(
      resolveModelDir(tmp(), 'u'),
      'MME_ERR_INVALID_MODEL',
      /^link\.onnx in u is a symbolic link; links are not followed$/,
    );
  });

  it("takes the load request's handler over model-config.json's, each by the same rule", async () => {
    put('model.onnx');
    put('model-config.json', JSON.stringify({ handler: 'lib/config.js' }));
    put('lib/config.js');
    put('lib/request.js');
    put('handler.js');
    assert.equal((await resolveModelDir(tmp(), 'u')).handlerPath, path.join(tmp(), 'lib/config.js'));
    assert.equal((await resolveModelDir(tmp(), 'u', 'lib/request.js')).handlerPath, path.join(tmp(), 'lib/request.js'));
    await assertMmeError(
      resolveModelDir(tmp(), 'u', 'lib/none.js'),
      'MME_ERR_INVALID_MODEL',
      /^handler "lib\/none\.js" named in the load request does not exist$/,
    );
    await assertMmeError(
      resolveModelDir(tmp(), 'u', '../escape.js'),
      'MME_ERR_BAD_REQUEST',
      /must be a relative path inside the model directory/,
    );
    await assertMmeError(
      resolveModelDir(tmp(), 'u', 'lib'),
      'MME_ERR_INVALID_MODEL',
      /^handler lib in u is not a regular file$/,
    );
  });

  it('refuses a handler reached through a symbolic link at any component', async () => {
    put('model.onnx');
    put('outside/h.js');
    symlinkSync(path.join(tmp(), 'outside'), path.join(tmp(), 'linked'));
    await assertMmeError(
      resolveModelDir(tmp(), 'u', 'linked/h.js'),
      'MME_ERR_INVALID_MODEL',
      /^linked in u is a symbolic link; links are not followed$/,
    );
  });
});
