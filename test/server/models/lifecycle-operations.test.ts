/**
 * The operations that change a registration (models/lifecycle-operations.ts): load, unload, scale
 * and shutdown, each under the name's lock. A name is claimed synchronously (one of concurrent loads
 * proceeds, the others 409); a scale waits for the load in progress; unload drains, and stops a
 * load at unregister_model_timeout; a load that does not fit answers 507 before any process starts;
 * shutdown stops loads at once, drains for its bound and counts what it drained and cut off.
 * Driven through the ModelManager on fake worker processes, on a virtual clock.
 */
import assert from 'node:assert/strict';
import { processHarness, statusOf, invokeRequest, type ProcessHarness } from '../../lifecycle/harness';
import { waitFor } from '../../../harness/process-probes';
import { settle } from '../../helpers/settle';

/** Whether `p` has settled after the pending turns of the event loop. */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await settle();
  return settled;
}

/** Waits for the `n`th worker process to receive its Load and answers it. */
async function finishLoad(h: ProcessHarness, n: number): Promise<void> {
  await waitFor(() => h.processes.all[n - 1]?.loads.length === 1, `load ${n} to reach its worker`);
  h.processes.all[n - 1].load();
}

describe('lifecycle operations (fake processes, virtual clock)', () => {
  it('claims a name synchronously: of five concurrent loads exactly one proceeds and four get 409', async () => {
    const h = processHarness('', { autoLoad: true });
    const url = h.model('a');
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, () => statusOf(h.manager.lifecycle.load({ modelName: 'a', url }))),
    );
    assert.deepEqual(outcomes.map((o) => o.status).sort(), [200, 409, 409, 409, 409]);
    assert.deepEqual(
      outcomes.filter((o) => o.code).map((o) => o.code),
      Array(4).fill('MME_ERR_MODEL_CONFLICT'),
    );
    assert.equal(h.processes.all.length, 1);
    await h.manager.close(0);
  });

  it("runs a scale asked for during the load once the load is over, under the name's lock", async () => {
    const h = processHarness();
    const loading = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    await waitFor(() => h.processes.all.length === 1, 'the load to start its worker');
    const scaling = statusOf(h.manager.lifecycle.scale('a', 2, 2, true));
    await settle();
    assert.equal(h.processes.all.length, 1, 'the scale waits for the load');
    await finishLoad(h, 1);
    assert.equal((await loading).status, 200);
    await finishLoad(h, 2);
    assert.equal((await scaling).status, 200);
    assert.equal(h.manager.registry.get('a').workers.length, 2);
    await h.manager.close(0);
  });

  it('answers a load that does not fit the memory budget with 507 before any process starts, leaving nothing registered', async () => {
    const h = processHarness('model_memory_budget_mb=1');
    const refused = await statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    assert.equal(refused.status, 507);
    assert.equal(refused.code, 'MME_ERR_INSUFFICIENT_MEMORY');
    assert.match(
      refused.error!.message,
      /^Model a does not fit: it needs about .* of the 1 MB model memory budget is in use, and it would not fit with every other model evicted either/,
    );
    assert.equal(h.processes.all.length, 0);
    assert.equal(h.manager.registry.current('a'), undefined);
    await h.manager.close(0);
  });

  it('unloads after the running request is answered, then stops the worker; the name is free again', async () => {
    const h = processHarness('model_cache=off', { autoLoad: true });
    const url = h.model('a');
    await h.manager.lifecycle.load({ modelName: 'a', url });
    const [worker] = h.processes.all;
    const running = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => worker.batches.length === 1, 'the request to reach the worker');
    const unloading = statusOf(h.manager.lifecycle.unload('a'));
    assert.equal(await isSettled(unloading), false, 'the unload drains first');
    assert.equal(worker.alive, true);
    const refused = await statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    assert.equal(refused.code, 'MME_ERR_MODEL_NOT_FOUND', 'a draining model admits no new request');
    worker.answer();
    assert.equal((await running).status, 200);
    assert.equal((await unloading).status, 200);
    assert.equal(worker.alive, false);
    assert.equal(h.manager.registry.registered('a'), false);
    assert.equal((await statusOf(h.manager.lifecycle.load({ modelName: 'a', url }))).status, 200);
    await h.manager.close(0);
  });

  it('stops a load still running at unregister_model_timeout: the unload answers 408 at exactly the bound, the load 409, nothing is left', async () => {
    const h = processHarness('unregister_model_timeout=2');
    const loading = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    await waitFor(() => h.processes.all[0]?.loads.length === 1, 'the load to reach its worker');
    const unloading = statusOf(h.manager.lifecycle.unload('a'));
    await settle();
    h.clock.advance(1999);
    assert.equal(await isSettled(unloading), false);
    h.clock.advance(1);
    const unload = await unloading;
    assert.equal(unload.status, 408);
    assert.equal(unload.code, 'MME_ERR_UNLOAD_TIMEOUT');
    assert.match(
      unload.error!.message,
      /it was still loading; the load was stopped and nothing is left of it\. The model is unloaded\.$/,
    );
    const load = await loading;
    assert.equal(load.code, 'MME_ERR_MODEL_CONFLICT');
    assert.match(load.error!.message, /was unloaded \(DELETE \/models\/a\) before its load finished/);
    await waitFor(() => h.processes.live().length === 0, 'the worker to be stopped');
    assert.equal(h.manager.registry.current('a'), undefined);
    await h.manager.close(0);
  });

  it('shuts down: a load in progress stops at once, admitted requests drain for the bound, and the counts say 1 drained and 1 cut off', async () => {
    const h = processHarness();
    const urlA = h.model('a');
    const loadingA = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: urlA }));
    await finishLoad(h, 1);
    assert.equal((await loadingA).status, 200);
    const [worker] = h.processes.all;
    const requests = [
      statusOf(h.manager.onDemand.invoke('a', invokeRequest())),
      statusOf(h.manager.onDemand.invoke('a', invokeRequest())),
    ];
    await waitFor(() => worker.batches.length === 2, 'both requests to reach the worker');
    const loadingB = statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b') }));
    await waitFor(() => h.processes.all.length === 2, "b's load to start");
    const closing = h.manager.close(5000);
    const b = await loadingB;
    assert.equal(b.code, 'MME_ERR_SHUTTING_DOWN');
    assert.equal((await statusOf(h.manager.onDemand.invoke('a', invokeRequest()))).code, 'MME_ERR_SHUTTING_DOWN');
    worker.answer();
    assert.equal((await requests[0]).status, 200);
    h.clock.advance(4999);
    assert.equal(await isSettled(closing), false, 'the drain lasts its bound');
    assert.equal(worker.alive, true);
    h.clock.advance(1);
    assert.deepEqual(await closing, { drained: 1, cutOff: 1 });
    assert.equal((await requests[1]).code, 'MME_ERR_SHUTTING_DOWN');
    assert.equal(h.processes.live().length, 0);
  });
});
