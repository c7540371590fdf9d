/** A caller's deadline and priority as the gateway checks and bounds them (gateway/request-controls.ts). */
import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import { MICROSECONDS, MILLISECONDS, requestPriority, requestTimeoutMs } from '../../src/gateway/request-controls';
import { MAX_TIMER_MS } from '../../src/util/timer-limit';

const limits = { maxRequestTimeoutMs: 0, priorityLevels: 3 };

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isMmeError(err));
    assert.equal(err.status, 400);
    return err.message;
  }
  throw new Error('accepted');
}

describe('request controls', () => {
  it('reads a timeout in its unit, 0 as none, capped by max_request_timeout and by what a timer holds', () => {
    assert.equal(requestTimeoutMs('250', MILLISECONDS, 'X-Request-Timeout', limits), 250);
    assert.equal(requestTimeoutMs(250_000, MICROSECONDS, 'parameters.timeout', limits), 250);
    assert.equal(requestTimeoutMs('0', MILLISECONDS, 'X-Request-Timeout', limits), null);
    assert.equal(requestTimeoutMs('60000', MILLISECONDS, 'h', { ...limits, maxRequestTimeoutMs: 1000 }), 1000);
    assert.equal(requestTimeoutMs(999_999_999_999_999, MILLISECONDS, 'h', limits), MAX_TIMER_MS);
  });

  it('refuses a timeout that is no whole number, quoting at most 100 characters', () => {
    for (const bad of ['1.5', '-1', 'soon', '', 1.5, -1, true, null, { a: 1 }])
      assert.match(
        refusal(() => requestTimeoutMs(bad, MILLISECONDS, 'X-Request-Timeout', limits)),
        /^X-Request-Timeout is /,
      );
    assert.match(
      refusal(() => requestTimeoutMs('x'.repeat(1000), MILLISECONDS, 'h', limits)),
      /… \(1000 characters\)/,
    );
  });

  it('reads a priority from 1 to priority_levels as a level from 0; 0 is the default (undefined); others are 400', () => {
    assert.equal(requestPriority('1', 'p', limits), 0);
    assert.equal(requestPriority(3, 'p', limits), 2);
    assert.equal(requestPriority('0', 'p', limits), undefined);
    for (const bad of ['4', -1, 1.5, 'high'])
      assert.match(
        refusal(() => requestPriority(bad, 'X-Request-Priority', limits)),
        /to 3 \(priority_levels\)/,
      );
  });
});
