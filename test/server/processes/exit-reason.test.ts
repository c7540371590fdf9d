import assert from 'node:assert/strict';
import { exitReason, loadExitError, runningRequestError } from '../../../src/server/processes/exit-reason';

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

describe('exit reasons: memory_limit_mb', () => {
  it("a SIGKILL its model's cgroup counted, or the memory watch's kill, is the model's limit: 507 naming memory_limit_mb, while loading and running", () => {
    const limit = exitReason({ code: null, signal: 'SIGKILL', killedBy: null, heapExhausted: false, limitOom: true });
    assert.equal(limit, 'memory-limit');
    assert.equal(
      exitReason({ code: null, signal: 'SIGKILL', killedBy: 'memory-limit', heapExhausted: false }),
      'memory-limit',
    );
    // The server's own kill still wins: an unload during an OOM is an unload.
    assert.equal(
      exitReason({ code: null, signal: 'SIGKILL', killedBy: 'stopped', heapExhausted: false, limitOom: true }),
      'stopped',
    );
    const exit = { code: null, signal: 'SIGKILL' as const, reason: limit, causedBy: null };
    const running = runningRequestError('m', exit, 60);
    assert.equal(running.status, 507);
    assert.match(
      running.message,
      /^The worker of model m was killed by SIGKILL while running this request: the model went past its memory_limit_mb/,
    );
    assert.match(
      loadExitError('m-1', exit).message,
      /^worker m-1 was killed by SIGKILL while loading the model: .*memory_limit_mb/,
    );
  });
});
