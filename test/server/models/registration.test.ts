import assert from 'node:assert/strict';
import { Registration } from '../../../src/server/models/registration';
import { IllegalStateError } from '../../../src/util/state-machine';
import { VirtualClock } from '../../helpers/virtual-clock';

describe('Registration', () => {
  it('the transition table refuses any move it does not list, and settles each promise once', async () => {
    const e = new Registration('m', '/m', false, false, new VirtualClock());
    assert.throws(() => e.to('draining'), IllegalStateError);
    e.to('ready');
    assert.equal(await e.loadSettled, true);
    assert.throws(() => e.to('loading'), IllegalStateError);
    e.to('failed');
    e.to('ready');
    e.to('draining');
    assert.throws(() => e.to('ready'), IllegalStateError);
    e.to('stopping');
    e.to('gone');
    await e.gone;
    assert.throws(() => e.to('stopping'), IllegalStateError);
    const failedLoad = new Registration('n', '/n', true, false, new VirtualClock());
    failedLoad.to('stopping');
    assert.equal(await failedLoad.loadSettled, false);
  });

  it('a load waiter holds the model from the instant it is ready, and gives the hold back if it stops waiting, before or after', () => {
    const e = new Registration('m', '/m', true, false, new VirtualClock());
    e.holdWhenReady(); // this waiter gets the model
    const leavesEarly = e.holdWhenReady();
    const leavesLate = e.holdWhenReady();
    leavesEarly();
    assert.equal(e.active, 0, 'nothing holds a model that is loading');
    let activeWhenHeard = -1;
    e.listener = { phaseChanged: () => (activeWhenHeard = e.active), heldChanged: () => {} };
    e.to('ready');
    assert.equal(activeWhenHeard, 2, 'the waiters held it before anyone heard it was ready');
    leavesLate();
    assert.equal(e.active, 1);
    e.release();
    assert.equal(e.active, 0);

    const failing = new Registration('n', '/n', true, false, new VirtualClock());
    const waiter = failing.holdWhenReady();
    failing.to('stopping');
    waiter();
    assert.equal(failing.active, 0, 'a failed load holds nothing, and giving up after it releases nothing');
  });
});
