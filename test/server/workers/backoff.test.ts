import assert from 'node:assert/strict';
import { restartDelaySeconds } from '../../../src/server/processes/backoff';

describe('worker restart back-off', () => {
  it('follows MMS\'s Fibonacci sequence in seconds', () => {
    assert.deepEqual(Array.from({ length: 10 }, (_, i) => restartDelaySeconds(i, 1000)), [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]);
  });

  it('is capped', () => {
    assert.equal(restartDelaySeconds(40, 60), 60);
  });
});
