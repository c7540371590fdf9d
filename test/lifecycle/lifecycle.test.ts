/**
 * The lifecycle core with dedicated workers on fake processes: each race is replayed in a fixed
 * order of events, with no real processes and no sleeps. Time is virtual: a timeout or back-off
 * passes when the test advances the clock, never by waiting. The same paths run against real
 * processes in test/e2e (worker-management, model-cache) and test/hardening.
 */
import assert from 'node:assert/strict';
import { MmeError } from '../../src/errors';
import { answerUntilSettled, harness, statusOf, invokeRequest } from './harness';
import { waitFor } from '../../harness/process-probes';

describe('lifecycle core (dedicated workers on fake processes, events in a chosen order)', () => {
  it('a response timeout that fires before the result: 504 once, the late result is dropped, the worker is replaced', async () => {
    const h = harness('default_response_timeout_seconds=1', { autoExit: false });
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    const [w1] = h.fleet.live('a');
    const slow = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => w1.batches.length === 1, 'dispatch');
    h.clock.advance(999);
    assert.equal(w1.killedBy, null, 'nothing happens before the response timeout');
    h.clock.advance(1);
    assert.equal(w1.killedBy, 'timeout-kill');
    assert.deepEqual(await slow, { status: 504, code: 'MME_ERR_WORKER_TIMEOUT', error: (await slow).error });
    // The result arrives between the kill and the exit: nobody is answered twice.
    w1.answer();
    w1.exit('SIGKILL');
    assert.equal(w1.exitInfo!.reason, 'timeout-kill');
    // The first restart's back-off is 0 s: it runs once the clock ticks.
    h.clock.advance(0);
    await waitFor(() => h.fleet.live('a').length === 1 && h.fleet.live('a')[0] !== w1, 'the replacement');
    const next = h.manager.onDemand.invoke('a', invokeRequest());
    const [w2] = h.fleet.live('a');
    await waitFor(() => w2.batches.length === 1, 'the next request to reach the replacement');
    w2.answer();
    assert.equal((await statusOf(next)).status, 200);
    const closing = h.manager.close(0);
    await waitFor(() => w2.killedBy === 'stopped', 'shutdown to kill the worker');
    w2.exit('SIGKILL');
    await closing;
  });

  it('a result that arrives first settles the request; its timer never kills the worker', async () => {
    const h = harness('default_response_timeout_seconds=1');
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    const [w] = h.fleet.live('a');
    const p = h.manager.onDemand.invoke('a', invokeRequest());
    await waitFor(() => w.batches.length === 1, 'dispatch');
    w.answer();
    assert.equal((await statusOf(p)).status, 200);
    await h.manager.close(0);
    assert.equal(w.killedBy, 'stopped');
  });

  it('a worker that dies while scale-up loads it fails the scale (500, not 507); the model keeps serving and the set refills', async () => {
    const h = harness();
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    h.fleet.options.autoLoad = false;
    const scaling = statusOf(h.manager.lifecycle.scale('a', 2, 2, true));
    await waitFor(() => h.fleet.of('a').length === 2, 'the second worker');
    h.fleet.of('a')[1].exit(null, 1);
    const scaled = await scaling;
    assert.equal(scaled.status, 500);
    assert.equal(scaled.code, 'MME_ERR_LOAD_FAILED');
    assert.equal(h.manager.registry.current('a')!.phase, 'ready');
    const p = h.manager.onDemand.invoke('a', invokeRequest());
    const [w1] = h.fleet.of('a');
    await waitFor(() => w1.batches.length === 1, 'dispatch to the surviving worker');
    w1.answer();
    assert.equal((await statusOf(p)).status, 200);
    h.clock.advance(0);
    await waitFor(() => h.fleet.of('a').length === 3, 'the set to start a replacement for the target of 2');
    h.fleet.of('a')[2].load();
    await waitFor(
      () => h.manager.registry.get('a').workers.filter((w) => w.state === 'ready').length === 2,
      'two ready workers',
    );
    await h.manager.close(0);
  });

  it('a replacement whose load fails is a failed restart: it is retried with back-off, and after three the model is FAILED', async () => {
    const h = harness();
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    h.fleet.options.autoLoad = false;
    h.fleet.live('a')[0].exit(null, 1);
    // Fibonacci back-off: the first restart at once, each after a failed one 1 s later.
    for (const [n, delayMs] of [
      [2, 0],
      [3, 1000],
      [4, 1000],
    ]) {
      if (delayMs > 0) {
        h.clock.advance(delayMs - 1);
        assert.equal(h.fleet.of('a').length, n - 1, `replacement ${n - 1} waits out its back-off`);
      }
      h.clock.advance(delayMs > 0 ? 1 : 0);
      await waitFor(() => h.fleet.of('a').length === n, `replacement ${n - 1}`);
      const w = h.fleet.of('a')[n - 1];
      w.failLoad(new MmeError('MME_ERR_INVALID_MODEL', 'the model file is gone'));
      await waitFor(() => !w.alive, `replacement ${n - 1} to exit`);
    }
    await waitFor(() => h.manager.registry.current('a')!.lastError !== null, 'the model to be marked failed');
    assert.match(h.manager.registry.current('a')!.lastError!.message, /the model file is gone/);
    assert.equal((await statusOf(h.manager.onDemand.invoke('a', invokeRequest()))).code, 'MME_ERR_MODEL_FAILED');
    await h.manager.close(0);
  });

  it('a replacement that cannot be started now (no room anywhere) is retried after a back-off; queued requests wait for it', async () => {
    const h = harness();
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    h.fleet.options.startsLeft = 0;
    const queued = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    const [w1] = h.fleet.live('a');
    await waitFor(() => w1.batches.length === 1, 'dispatch');
    w1.exit(null, 1);
    assert.equal((await queued).status, 500);
    const waiting = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    h.clock.advance(0);
    assert.ok(
      h.logs.some((l) => /could not start a replacement worker: no room/.test(l)),
      'the refused start',
    );
    h.fleet.options.startsLeft = 1;
    h.clock.advance(999);
    assert.equal(h.fleet.live('a').length, 0, 'the retry waits out its back-off');
    h.clock.advance(1);
    await waitFor(() => h.fleet.live('a').length === 1, 'the retry to start a worker');
    const [w2] = h.fleet.live('a');
    await waitFor(() => w2.batches.length === 1, 'the waiting request to reach it');
    w2.answer();
    assert.equal((await waiting).status, 200);
    await h.manager.close(0);
  });

  it('a moved worker (its shared host is recycled) serves until its successor has loaded, then goes', async () => {
    const h = harness();
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    h.fleet.options.autoLoad = false;
    const [w1] = h.fleet.live('a');
    const model = h.manager.registry.get('a');
    model.onRelocate(w1.slot);
    assert.equal(h.fleet.of('a').length, 2, 'the successor starts at once');
    const during = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => w1.batches.length === 1, 'the request to go to the old worker while the successor loads');
    w1.answer();
    assert.equal((await during).status, 200);
    const w2 = h.fleet.of('a')[1];
    w2.load();
    await waitFor(() => w1.killedBy === 'stopped', 'the old worker to go once the successor is ready');
    const after = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => w2.batches.length === 1, 'the next request to reach the successor');
    w2.answer();
    assert.equal((await after).status, 200);
    assert.equal(h.fleet.live('a').length, 1);
    await h.manager.close(0);
  });

  it('a busy worker retired by scale-down finishes its batch; a crash of it then is 500 and starts no replacement', async () => {
    const h = harness('default_workers_per_model=2');
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    const requests = [
      statusOf(h.manager.onDemand.invoke('a', invokeRequest())),
      statusOf(h.manager.onDemand.invoke('a', invokeRequest())),
    ];
    await waitFor(() => h.fleet.live('a').every((w) => w.batches.length === 1), 'one request on each worker');
    await h.manager.lifecycle.scale('a', 1, 1, false);
    const retired = h.fleet.live('a').find((w) => w.slot.state === 'stopping')!;
    const kept = h.fleet.live('a').find((w) => w.slot.state === 'ready')!;
    retired.exit(null, 1);
    kept.answer();
    const outcomes = await Promise.all(requests);
    assert.deepEqual(outcomes.map((o) => o.status).sort(), [200, 500]);
    assert.equal(h.fleet.live('a').length, 1);
    await h.manager.close(0);
    assert.equal(h.fleet.live().length, 0);
  });

  describe('exit during load', () => {
    for (const [what, end, status, code] of [
      ['a SIGKILL the server did not send (the OOM killer)', 'SIGKILL', 507, 'MME_ERR_INSUFFICIENT_MEMORY'],
      ['a crash', 'crash', 500, 'MME_ERR_LOAD_FAILED'],
    ] as const) {
      it(`${what}: ${status}, and nothing is left`, async () => {
        const h = harness('', { autoLoad: false });
        const load = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
        await waitFor(() => h.fleet.of('a').length === 1, 'the worker');
        h.fleet.of('a')[0].exit(end === 'SIGKILL' ? 'SIGKILL' : null, end === 'SIGKILL' ? null : 1);
        const r = await load;
        assert.equal(r.status, status);
        assert.equal(r.code, code);
        assert.equal(h.manager.registry.current('a'), undefined);
        assert.equal(h.manager.registry.held('all').bytes, 0);
      });
    }
  });

  it('shutdown during a load stops the load at once (503, never 507) and leaves no worker', async () => {
    const h = harness('', { autoLoad: false });
    const load = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    await waitFor(() => h.fleet.of('a').length === 1, 'the worker');
    await h.manager.close(60_000);
    const r = await load;
    assert.equal(r.status, 503);
    assert.equal(r.code, 'MME_ERR_SHUTTING_DOWN');
    assert.equal(h.fleet.of('a')[0].exitInfo!.reason, 'stopped');
    assert.equal(h.fleet.live().length, 0);
    assert.equal(h.manager.registry.current('a'), undefined);
  });

  it("unload during an eviction's drain: the victim being drained is 404, another model unloads (200), the eviction picks again and the load fits", async () => {
    // a and b measure 30 MB; c's 20 MB file is estimated at 30 + 1.5 × 20 = 60 MB: two victims are needed in 70 MB.
    const h = harness('model_cache=on\nmodel_memory_budget_mb=70\neviction_policy=lru', {
      memoryBytes: () => 30 * 2 ** 20,
    });
    h.model('a');
    h.model('b');
    h.model('c', 20 * 2 ** 20);
    const held = h.manager.onDemand.invoke('a', invokeRequest());
    await waitFor(() => h.fleet.of('a')[0]?.batches.length === 1, 'a request running on a');
    const [wa] = h.fleet.of('a');
    const bHeld = h.manager.onDemand.invoke('b', invokeRequest());
    await waitFor(() => h.fleet.of('b')[0]?.batches.length === 1, 'a request running on b');
    const [wb] = h.fleet.of('b');
    const c = statusOf(h.manager.onDemand.invoke('c', invokeRequest()));
    await waitFor(
      () => h.manager.registry.current('a')?.phase === 'draining',
      'a (least recently used) to drain for the eviction',
    );
    assert.equal((await statusOf(h.manager.lifecycle.unload('a'))).status, 404);
    wb.answer();
    assert.equal((await statusOf(bHeld)).status, 200);
    assert.equal((await statusOf(h.manager.lifecycle.unload('b'))).status, 200);
    wa.answer();
    assert.equal((await statusOf(held)).status, 200);
    await waitFor(
      () => h.fleet.live('c').length === 1 && h.fleet.live('c')[0].batches.length === 1,
      'c to load and take its request',
    );
    h.fleet.live('c')[0].answer();
    assert.equal((await c).status, 200);
    assert.equal(h.manager.registry.current('a'), undefined);
    assert.equal(h.manager.registry.current('b'), undefined);
    assert.equal(h.manager.events.stats.evictions, 1);
    await h.manager.close(0);
  });

  it('on-demand loads queued behind max_concurrent_loads are not counted as loaded: the one admitted evicts instead of answering 507', async () => {
    const h = harness('model_cache=on\nmax_loaded_models=2\nmax_concurrent_loads=1\neviction_policy=lru');
    const answerAll = () => h.fleet.answerEach();
    for (const name of ['a', 'b', 'c', 'd', 'e']) h.model(name);
    await answerUntilSettled(
      [h.manager.onDemand.invoke('a', invokeRequest()), h.manager.onDemand.invoke('b', invokeRequest())],
      answerAll,
      'a and b to load and answer',
    );
    // c takes the one load permit while d and e wait for it: only a and b are loaded, and both are idle.
    const misses = ['c', 'd', 'e'].map((name) => statusOf(h.manager.onDemand.invoke(name, invokeRequest())));
    const outcomes = await answerUntilSettled(misses, answerAll, 'c, d and e to load and answer');
    assert.deepEqual(outcomes, [{ status: 200 }, { status: 200 }, { status: 200 }]);
    assert.equal(h.manager.events.stats.evictions, 3);
    assert.equal(h.manager.registry.servingCount(), 2);
    await h.manager.close(0);
  });

  it('a burst of more distinct models than max_loaded_models waits for room instead of 507: each load waits for the one before, whose waiters are answered first', async () => {
    const h = harness('model_cache=on\nmax_loaded_models=1\nmax_concurrent_loads=4\neviction_policy=lru');
    const names = ['a', 'b', 'c', 'd'];
    for (const name of names) h.model(name);
    let most = 0;
    const answerAll = () => {
      most = Math.max(most, h.fleet.live().length);
      h.fleet.answerEach();
    };
    const burst = names
      .flatMap((name) => [name, name])
      .map((name) => statusOf(h.manager.onDemand.invoke(name, invokeRequest())));
    const outcomes = await answerUntilSettled(burst, answerAll, 'every model of the burst to load and answer');
    assert.deepEqual(outcomes, Array(8).fill({ status: 200 }));
    // Each model was loaded once and evicted only after both of its requests were answered.
    assert.equal(h.manager.events.stats.loads, 4);
    assert.equal(h.manager.events.stats.evictions, 3);
    assert.equal(most, 1, 'never more than one model at a time');
    await h.manager.close(0);
  });

  it('load during unload: the new load waits for the unload, which never removes the new registration', async () => {
    const h = harness();
    const url = h.model('a');
    await h.manager.lifecycle.load({ modelName: 'a', url });
    const [w1] = h.fleet.live('a');
    const held = h.manager.onDemand.invoke('a', invokeRequest());
    await waitFor(() => w1.batches.length === 1, 'a request running');
    const unload = statusOf(h.manager.lifecycle.unload('a'));
    await waitFor(() => h.manager.registry.current('a')?.phase === 'draining', 'the unload to drain');
    const reload = statusOf(h.manager.lifecycle.load({ modelName: 'a', url }));
    assert.equal(h.manager.registry.current('a')!.phase, 'loading');
    assert.equal((await statusOf(h.manager.lifecycle.load({ modelName: 'a', url }))).status, 409);
    w1.answer();
    assert.equal((await statusOf(held)).status, 200);
    assert.equal((await unload).status, 200);
    assert.equal((await reload).status, 200);
    assert.equal(h.manager.registry.current('a')!.phase, 'ready');
    assert.equal(h.fleet.live('a').length, 1);
    assert.notEqual(h.fleet.live('a')[0], w1);
    await h.manager.close(0);
  });

  it('unload is bounded by unregister_model_timeout: 408, the running request is stopped (503), the worker killed, the model gone', async () => {
    const h = harness('unregister_model_timeout=1');
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    const [w] = h.fleet.live('a');
    const held = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => w.batches.length === 1, 'a request running');
    const unloading = statusOf(h.manager.lifecycle.unload('a'));
    await waitFor(() => h.manager.registry.current('a')?.phase === 'draining', 'the unload to drain');
    h.clock.advance(1000);
    const r = await unloading;
    assert.equal(r.status, 408);
    assert.equal(r.code, 'MME_ERR_UNLOAD_TIMEOUT');
    assert.match(r.error!.message, /unregister_model_timeout \(1 s\).*The model is unloaded/);
    const answered = await held;
    assert.equal(answered.status, 503);
    assert.equal(w.exitInfo!.reason, 'stopped');
    assert.equal(h.manager.registry.current('a'), undefined);
  });

  it('an unload that outlasts a load in progress stops the load: 408, then nothing is left of either', async () => {
    const h = harness('unregister_model_timeout=1', { autoLoad: false });
    const load = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    await waitFor(() => h.fleet.of('a').length === 1, 'the worker');
    const unloading = statusOf(h.manager.lifecycle.unload('a'));
    h.clock.advance(1000);
    const r = await unloading;
    assert.equal(r.status, 408);
    assert.equal((await load).status, 409);
    assert.equal(h.fleet.live().length, 0);
    assert.equal(h.manager.registry.current('a'), undefined);
  });

  it('with load_failure_cache_seconds=0, an invoke that waited for a failing load gets its error (400) after one load, not 503 after many', async () => {
    const h = harness('model_cache=on\nload_failure_cache_seconds=0', { autoLoad: false });
    h.model('broken');
    const invoke = statusOf(h.manager.onDemand.invoke('broken', invokeRequest()));
    await waitFor(() => h.fleet.of('broken').length === 1, 'the load');
    h.fleet.of('broken')[0].failLoad(new MmeError('MME_ERR_INVALID_MODEL', 'the model could not be loaded: bad graph'));
    const r = await invoke;
    assert.equal(r.status, 400);
    assert.equal(r.code, 'MME_ERR_INVALID_MODEL');
    assert.equal(h.fleet.of('broken').length, 1);
    assert.equal(h.manager.events.stats.loadFailures, 1);
  });

  it('a worker the server kills is never 507; one killed by someone else is', async () => {
    const h = harness('default_workers_per_model=1', { autoExit: false });
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    const first = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    const [w1] = h.fleet.live('a');
    await waitFor(() => w1.batches.length === 1, 'dispatch');
    w1.exit('SIGKILL');
    assert.equal((await first).status, 507);
    h.clock.advance(0);
    await waitFor(() => h.fleet.live('a').length === 1, 'the replacement');
    const [w2] = h.fleet.live('a');
    await waitFor(() => w2.slot.state === 'ready', 'the replacement to load');
    const second = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => w2.batches.length === 1, 'dispatch');
    const closing = h.manager.close(0);
    // A drain bounded by 0 s ends when the clock next ticks.
    await waitFor(() => h.manager.registry.current('a')?.phase === 'draining', 'shutdown to drain the model');
    h.clock.advance(0);
    await waitFor(() => w2.killedBy === 'stopped', 'shutdown to kill the worker');
    w2.exit('SIGKILL');
    await closing;
    assert.equal((await second).status, 503);
  });
});
