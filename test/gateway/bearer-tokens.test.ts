import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import { bearerMatcher, InferenceToken } from '../../src/gateway/bearer-tokens';

describe('bearer tokens', () => {
  it('matches "Bearer <token>" for any of the tokens, case-insensitively in the scheme only', () => {
    const matches = bearerMatcher(['new-token', 'old-token']);
    for (const ok of ['Bearer new-token', 'bearer old-token', 'BEARER  new-token ']) assert.ok(matches(ok), ok);
    for (const bad of [undefined, '', 'new-token', 'Basic new-token', 'Bearer New-Token', 'Bearer new-toke', 'Bearer '])
      assert.ok(!matches(bad), String(bad));
  });

  it('refuses with 401 and WWW-Authenticate, counts the refusal, and never quotes what was sent', () => {
    let refused = 0;
    const token = new InferenceToken(['s3cret'], () => refused++);
    token.check('Bearer s3cret', 'Authorization header');
    assert.equal(refused, 0);
    try {
      token.check('Bearer guessed-wrong', 'Authorization header');
      assert.fail('accepted a wrong token');
    } catch (err) {
      assert.ok(isMmeError(err));
      assert.equal(err.status, 401);
      assert.equal(err.headers['WWW-Authenticate'], 'Bearer');
      assert.doesNotMatch(err.message, /guessed-wrong|s3cret/);
    }
    assert.equal(refused, 1);
  });
});
