import assert from 'node:assert/strict';
import { exitReason, runningRequestError } from '../../../src/server/processes/exit-reason';

describe('exit reasons', () => {
  it("exit reasons: the server's own kill wins; an unsent SIGKILL or an exhausted heap is memory; anything else a crash", () => {
    assert.equal(exitReason({ code: null, signal: 'SIGKILL', killedBy: 'stopped', heapExhausted: false }), 'stopped');
    assert.equal(
      exitReason({ code: null, signal: 'SIGKILL', killedBy: 'timeout-kill', heapExhausted: false }),
      'timeout-kill',
    );
    assert.equal(exitReason({ code: null, signal: 'SIGKILL', killedBy: null, heapExhausted: false }), 'oom');
    assert.equal(exitReason({ code: 137, signal: null, killedBy: null, heapExhausted: false }), 'oom');
    assert.equal(exitReason({ code: null, signal: 'SIGABRT', killedBy: null, heapExhausted: true }), 'oom');
    assert.equal(exitReason({ code: null, signal: 'SIGSEGV', killedBy: null, heapExhausted: false }), 'crashed');
    assert.equal(exitReason({ code: 1, signal: null, killedBy: null, heapExhausted: false }), 'crashed');
    const status = (reason: Parameters<typeof runningRequestError>[1]['reason']) =>
      runningRequestError('m', { code: null, signal: 'SIGKILL', reason, causedBy: null }, 60).status;
    assert.deepEqual(
      ['stopped', 'timeout-kill', 'protocol-error', 'oom', 'crashed'].map((r) => status(r as never)),
      [503, 504, 500, 507, 500],
    );
    // A kill for one model's timeout names that model to the others it took down with it.
    const killedFor = (causedBy: string) =>
      runningRequestError('m', { code: null, signal: 'SIGKILL', reason: 'timeout-kill', causedBy }, 60).message;
    assert.match(killedFor('other'), /of model m was stopped because model other ran past its timeout/);
    assert.match(killedFor('m'), /^Model m did not answer within 60 s/);
  });
});
