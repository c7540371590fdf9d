import assert from 'node:assert/strict';
import path from 'node:path';
import { isMmeError } from '../../src/errors';
import { relativePaths } from '../../src/repository/object-paths';

const refused = (keys: string[], why: RegExp) =>
  assert.throws(
    () => relativePaths(keys, 'm'),
    (err: unknown) =>
      isMmeError(err) && err.status === 400 && err.code === 'MME_ERR_INVALID_MODEL' && why.test(err.message),
  );

describe('repository object keys as file paths (issue 49, C7)', () => {
  it('gives the keys below a model as relative paths', () => {
    assert.deepEqual(relativePaths(['model.onnx', 'lib/a.js'], 'm'), ['model.onnx', path.join('lib', 'a.js')]);
  });

  it("refuses, as the model's 400, a key no file can have: '..', a segment past 255 bytes, a file that is also a directory", () => {
    refused(['../x'], /empty, '\.' or '\.\.' path segment/);
    refused(['a//b'], /empty/);
    refused(
      [`${'x'.repeat(300)}.bin`],
      /"x{100}"… \(304 characters\) whose key has a path segment longer than 255 bytes/,
    );
    refused([`${'é'.repeat(128)}`], /longer than 255 bytes/);
    refused(['model.onnx', 'model.onnx/inner'], /"model\.onnx" that is both a file and the directory/);
    refused(['lib/a/b', 'lib/a'], /"lib\/a" that is both/);
  });
});
