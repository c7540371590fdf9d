import assert from 'node:assert/strict';
import { kSamePressMs, StopSignals } from '../src/stop-signals';
import { VirtualClock } from './helpers/virtual-clock';

describe('StopSignals', () => {
  it('the first signal drains; repeats within a second are the same press; a later one forces the exit', () => {
    const clock = new VirtualClock();
    const signals = new StopSignals(clock);
    assert.equal(signals.received(), 'drain');
    clock.advance(22);
    assert.equal(signals.received(), 'repeat');
    clock.advance(kSamePressMs - 23);
    assert.equal(signals.received(), 'repeat');
    clock.advance(1);
    assert.equal(signals.received(), 'force');
  });
});
