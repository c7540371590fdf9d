import assert from 'node:assert/strict';
import { isMmeError, type ErrorCode } from '../../src/errors';

/** `fn` throws an MmeError of `code` whose message matches `pattern`; the message, for more checks. */
export function throwsMme(fn: () => unknown, code: ErrorCode, pattern: RegExp): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isMmeError(err), `not an MmeError: ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, pattern);
    return err.message;
  }
  assert.fail(`expected ${code} matching ${pattern}`);
}
