/**
 * Model names (src/server/models/model-names.ts): the alphabet a name may use (it becomes a
 * directory name and a log field), the 400 that says so, and a 404 that quotes a name no model
 * could have.
 */
import assert from 'node:assert/strict';
import { checkModelName, isModelName, modelNotFound } from '../../../src/server/models/model-names';
import { isMmeError } from '../../../src/errors';

describe('server/models/model-names: which names can be models', () => {
  it("takes 1-255 letters, digits, '.', '_' or '-' starting with a letter or digit", () => {
    for (const good of ['a', 'A9', 'resnet-50_v1.2', '0', 'x'.repeat(255), 'a.b']) assert.ok(isModelName(good), good);
    for (const bad of ['', '-a', '.a', '_a', 'a/b', 'a b', 'é', 'x'.repeat(256), 'a..b', '..', 'a\n', '__proto__'])
      assert.ok(!isModelName(bad), JSON.stringify(bad));
  });

  it('refuses a missing or invalid model_name with 400, saying which characters are allowed and quoting it short', () => {
    assert.equal(checkModelName('m-1'), 'm-1');
    for (const missing of [undefined, null, '', 7, ['a']]) {
      assert.throws(
        () => checkModelName(missing),
        (e: unknown) => isMmeError(e) && e.status === 400 && e.message === 'Parameter model_name is required.',
      );
    }
    assert.throws(
      () => checkModelName(`../${'x'.repeat(500)}`),
      (e: unknown) =>
        isMmeError(e) &&
        e.code === 'MME_ERR_BAD_REQUEST' &&
        /^model_name "\.\.\/x{97}"… \(503 characters\) is not valid: use 1-255 letters, digits, '\.', '_' or '-', starting with a letter or digit$/.test(
          e.message,
        ),
    );
  });

  it("answers a 404 naming a model's name as MMS does, and any other text quoted", () => {
    const plain = modelNotFound('resnet');
    assert.equal(plain.code, 'MME_ERR_MODEL_NOT_FOUND');
    assert.equal(plain.message, 'Model not found: resnet');
    assert.equal(modelNotFound('a b\nc').message, 'Model not found: "a b\\nc"');
  });
});
