import assert from 'node:assert/strict';
import { Backoff, kStableMs, restartDelaySeconds } from '../../../src/server/processes/backoff';
import { VirtualClock } from '../../helpers/virtual-clock';

describe('worker restart back-off', () => {
  it("follows MMS's Fibonacci sequence in seconds", () => {
    assert.deepEqual(
      Array.from({ length: 10 }, (_, i) => restartDelaySeconds(i, 1000)),
      [0, 1, 1, 2, 3, 5, 8, 13, 21, 34],
    );
  });

  it('is capped', () => {
    assert.equal(restartDelaySeconds(40, 60), 60);
  });
});

describe('Backoff: one restart loop on an injected clock', () => {
  it('waits out the current delay, counts failures, and starts again once a restart has stayed up kStableMs', () => {
    const clock = new VirtualClock();
    const b = new Backoff(clock);
    const restarts: number[] = [];
    b.wait(() => restarts.push(clock.now()));
    b.wait(() => restarts.push(-1));
    assert.equal(b.waiting, true, 'one restart waits at a time');
    clock.advance(0);
    assert.deepEqual(restarts, [0]);
    b.failed();
    b.failed();
    assert.equal(b.delaySeconds, 1);
    b.wait(() => restarts.push(clock.now()));
    clock.advance(999);
    assert.deepEqual(restarts, [0]);
    clock.advance(1);
    assert.deepEqual(restarts, [0, 1000]);
    let up = false;
    b.watch(() => up);
    clock.advance(kStableMs);
    assert.equal(b.attempt, 2, 'a restart that did not stay up leaves the count');
    up = true;
    b.watch(() => up);
    clock.advance(kStableMs);
    assert.equal(b.attempt, 0);
  });

  it('close() clears every timer', () => {
    const clock = new VirtualClock();
    const b = new Backoff(clock);
    b.wait(() => assert.fail('a closed back-off restarted'));
    b.watch(() => true);
    b.close();
    assert.equal(clock.pending, 0);
    assert.equal(b.waiting, false);
  });
});
