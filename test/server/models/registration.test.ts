import assert from 'node:assert/strict';
import { IllegalTransitionError, Registration } from '../../../src/server/models/registration';
import { VirtualClock } from '../../helpers/virtual-clock';

describe('Registration', () => {
  it('the transition table refuses any move it does not list, and settles each promise once', async () => {
    const e = new Registration('m', '/m', false, false, new VirtualClock());
    assert.throws(() => e.to('draining'), IllegalTransitionError);
    e.to('ready');
    assert.equal(await e.loadSettled, true);
    assert.throws(() => e.to('loading'), IllegalTransitionError);
    e.to('failed');
    e.to('ready');
    e.to('draining');
    assert.throws(() => e.to('ready'), IllegalTransitionError);
    e.to('stopping');
    e.to('gone');
    await e.gone;
    assert.throws(() => e.to('stopping'), IllegalTransitionError);
    const failedLoad = new Registration('n', '/n', true, false, new VirtualClock());
    failedLoad.to('stopping');
    assert.equal(await failedLoad.loadSettled, false);
  });
});
