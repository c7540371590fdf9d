/**
 * deadlineSignal (src/util/deadline-signal.ts) on the virtual clock: it aborts with its own reason
 * once its time has passed, with the parent's reason when the parent aborts first, and done()
 * leaves neither a timer nor a listener behind.
 */
import assert from 'node:assert/strict';
import { deadlineSignal } from '../../src/util/deadline-signal';
import { VirtualClock } from '../helpers/virtual-clock';

const late = () => new Error('too late');

describe('util/deadline-signal: a wait bounded by its own deadline and its caller’s abort', () => {
  it('aborts with its own reason once its time has passed, not before', () => {
    const clock = new VirtualClock();
    const { signal } = deadlineSignal(new AbortController().signal, 100, late, clock);
    clock.advance(99);
    assert.equal(signal.aborted, false);
    clock.advance(1);
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as Error).message, 'too late');
  });

  it("aborts with the parent's reason when the parent aborts first, or was already aborted", () => {
    const clock = new VirtualClock();
    const parent = new AbortController();
    const { signal } = deadlineSignal(parent.signal, 100, late, clock);
    parent.abort(new Error('client left'));
    assert.equal((signal.reason as Error).message, 'client left');
    const gone = deadlineSignal(parent.signal, 100, late, clock);
    assert.equal((gone.signal.reason as Error).message, 'client left');
  });

  it('a negative time is already due; done() clears the timer and the listener', () => {
    const clock = new VirtualClock();
    assert.equal(clock.pending, 0);
    const due = deadlineSignal(new AbortController().signal, -5, late, clock);
    clock.advance(0);
    assert.equal(due.signal.aborted, true);
    const parent = new AbortController();
    const wait = deadlineSignal(parent.signal, 100, late, clock);
    wait.done();
    assert.equal(clock.pending, 0, 'the timer is cleared');
    parent.abort(new Error('after done'));
    clock.advance(1000);
    assert.equal(wait.signal.aborted, false, 'neither the parent nor the time reaches it after done()');
  });
});
