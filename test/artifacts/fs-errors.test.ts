/**
 * Filesystem failures as client-visible errors (src/artifacts/fs-errors.ts): a full disk is a
 * 507 of its own (not the memory code), anything else a failed load naming only the errno, never the paths Node's own
 * message carries.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { diskFullError, errnoOf, fsFailure, isDiskFull } from '../../src/artifacts/fs-errors';

/** A real failure of the filesystem, with the absolute path Node puts in its message. */
function realFailure(): NodeJS.ErrnoException {
  try {
    fs.readFileSync(path.join(os.tmpdir(), 'mme-no-such-dir', 'secret-name.onnx'));
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
  throw new Error('the read succeeded');
}

describe('artifacts/fs-errors: filesystem failures as errors a client may see', () => {
  it('reads the errno of a failure, and knows a full disk or quota by it', () => {
    const err = realFailure();
    assert.equal(errnoOf(err), 'ENOENT');
    assert.equal(errnoOf(null), undefined);
    assert.equal(errnoOf(new Error('plain')), undefined);
    for (const code of ['ENOSPC', 'EDQUOT']) assert.ok(isDiskFull(Object.assign(new Error(code), { code })), code);
    assert.ok(!isDiskFull(err));
  });

  it('names only the errno of an unexpected failure, never its path, and keeps the cause', () => {
    const err = realFailure();
    assert.match(err.message, /secret-name\.onnx/, "Node's own message has the path");
    const e = fsFailure('extracting the model', err);
    assert.equal(e.code, 'MME_ERR_LOAD_FAILED');
    assert.equal(e.message, 'extracting the model failed: ENOENT');
    assert.equal(e.cause, err);
    assert.equal(fsFailure('reading', 'odd').message, 'reading failed: odd');
  });

  it('answers a full disk or quota with 507 under its own code, naming the directory and what to do, never the memory code', () => {
    for (const [errno, said] of [
      ['ENOSPC', 'no space is left on the disk (ENOSPC)'],
      ['EDQUOT', 'the disk quota is used up (EDQUOT)'],
    ]) {
      const full = Object.assign(new Error(`${errno}: write /var/x`), { code: errno });
      for (const e of [fsFailure('writing the download', full), diskFullError('writing the download', full)]) {
        assert.equal(e.code, 'MME_ERR_INSUFFICIENT_STORAGE');
        assert.equal(e.status, 507, 'SageMaker unloads idle models on a 507, which frees their files');
        assert.equal(e.type, 'InsufficientStorageException');
        assert.equal(
          e.message,
          `writing the download failed: ${said} of the directory where the server extracts model archives (in TMPDIR). Unload a model (DELETE /models/{name}) to free its files, free space there, or give that directory a larger volume.`,
        );
        assert.ok(!e.message.includes('/var/x'));
        assert.equal(e.cause, full);
      }
    }
    assert.match(
      diskFullError('downloading', { code: 'ENOSPC' }, 'model_cache_dir').message,
      /disk \(ENOSPC\) of model_cache_dir\./,
    );
  });
});
