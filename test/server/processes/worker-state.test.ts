import assert from 'node:assert/strict';
import { processStates, workerStates } from '../../../src/server/processes/worker-state';
import { IllegalStateError } from '../../../src/util/state-machine';

describe('process and worker states', () => {
  it('the process and worker tables refuse any move they do not list', () => {
    const p = processStates(() => 'process p');
    assert.throws(() => p.to('draining'), IllegalStateError);
    p.to('serving');
    p.to('draining');
    assert.throws(() => p.to('serving'), /process p: illegal state transition draining → serving/);
    p.to('exited');
    assert.throws(() => p.to('exited'), IllegalStateError);
    const w = workerStates(() => 'worker w', 'starting');
    assert.throws(() => w.to('ready'), IllegalStateError);
    w.to('loading');
    w.to('ready');
    assert.equal(w.can('loading'), false);
    w.to('stopping');
    w.to('stopped');
    assert.throws(() => w.to('failed'), IllegalStateError);
  });
});
