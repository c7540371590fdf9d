/** The small pieces of the lifecycle core: the per-name lock, exit reasons, the transition table. */
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { Fifo } from '../../src/util/fifo';
import { IllegalTransitionError, Registration } from '../../src/server/models/registration';
import { KeyedLock } from '../../src/util/keyed-lock';
import { VirtualClock } from '../helpers/virtual-clock';
import { exitReason, runningRequestError } from '../../src/server/processes/exit-reason';
import { IllegalStateError, processStates, workerStates } from '../../src/server/processes/worker-state';

describe('lifecycle pieces', () => {
  it('KeyedLock serves waiters in order, per key, and tryAcquire never jumps the queue', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const first = await lock.acquire('a');
    const waiting = [1, 2].map((n) =>
      lock.acquire('a').then((release) => {
        order.push(`a${n}`);
        release();
      }),
    );
    const other = lock.tryAcquire('b');
    assert.ok(other, 'another key is free');
    assert.equal(lock.tryAcquire('a'), null);
    first();
    // Handed straight to the next waiter: still held, so tryAcquire cannot slip in between.
    assert.equal(lock.tryAcquire('a'), null);
    await Promise.all(waiting);
    assert.deepEqual(order, ['a1', 'a2']);
    const free = (key: string) => {
      const release = lock.tryAcquire(key);
      release?.();
      return release !== null;
    };
    assert.equal(free('a'), true, 'a is free once its last waiter released it');
    other();
    assert.equal(free('b'), true);
  });

  it('Fifo keeps order across shifts, put-backs, removals and compaction', () => {
    const q = new Fifo<number>();
    for (let i = 0; i < 5000; i++) q.push(i);
    for (let i = 0; i < 3000; i++) assert.equal(q.shift(), i);
    q.unshift([-2, -1]);
    assert.ok(q.remove(4000));
    assert.equal(q.length, 2001);
    assert.equal(q.peek(), -2);
    const rest = q.drainAll();
    assert.deepEqual(rest.slice(0, 3), [-2, -1, 3000]);
    assert.ok(!rest.includes(4000));
    assert.equal(rest.at(-1), 4999);
    assert.equal(q.shift(), undefined);
  });

  it('Fifo lets go of what it handed out, and prune drops the dead keeping order', async () => {
    // A taken item left in the array's dead prefix was the p99.9 stall: every scavenge copied a
    // thousand settled requests' contexts. Reachable only from the queue, it must be collectable.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const q = new Fifo<{ n: number }>();
    let taken: WeakRef<{ n: number }> | null = null;
    (() => {
      for (let n = 0; n < 3; n++) q.push({ n });
      taken = new WeakRef(q.shift()!);
    })();
    await new Promise(setImmediate);
    gc();
    assert.equal(taken.deref(), undefined, 'the shifted item is garbage');
    q.push({ n: 3 });
    q.prune((item) => item.n % 2 === 1);
    assert.deepEqual(
      q.drainAll().map((i) => i.n),
      [2],
    );
  });

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
