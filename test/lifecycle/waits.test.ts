/**
 * Issue 49's C2: every wait of a load has a deadline of its own. A load waiting for a load permit or
 * for room gives up at its own load_timeout, whatever the loads ahead of it do, and DELETE of a
 * load still waiting answers within unregister_model_timeout. Fake workers whose loads never
 * finish (the test never calls load()), timeouts on the virtual clock.
 */
import assert from 'node:assert/strict';
import { waitFor } from '../../harness/process-probes';
import { harness, statusOf, type Harness } from './harness';

/**
 * Loads `name`, whose worker never finishes loading, and waits until it has its worker (so it holds
 * its slot). The outcome comes in an object: an async function would wait for a promise it returns.
 */
async function stuckLoad(h: Harness, name: string): Promise<{ outcome: Promise<unknown> }> {
  const outcome = statusOf(h.manager.lifecycle.load({ modelName: name, url: h.model(name) }));
  await waitFor(() => h.fleet.live(name).length === 1, `${name}'s worker to start loading`);
  return { outcome };
}

/** Starts `start` and waits until it has armed a timer of its own on the virtual clock (its wait's deadline). */
async function armed<T>(h: Harness, start: () => Promise<T>, what: string): Promise<{ outcome: Promise<T> }> {
  const before = h.clock.pending;
  const outcome = start();
  await waitFor(() => h.clock.pending > before, what);
  return { outcome };
}

describe('lifecycle: every wait of a load has a deadline of its own (issue 49, C2)', () => {
  it('a load waiting for a load permit gives up at its own load_timeout (503), while the load ahead still holds it', async () => {
    const h = harness('max_concurrent_loads=1\nmodel_load_timeout=3600', { autoLoad: false });
    const ahead = await stuckLoad(h, 'a');
    const waiting = await armed(
      h,
      () => statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b'), loadTimeout: 5 })),
      "b's wait for a load permit",
    );
    h.clock.advance(5000);
    const b = await waiting.outcome;
    assert.equal(b.status, 503);
    assert.equal(b.code, 'MME_ERR_LOAD_WAIT_TIMEOUT');
    assert.match(b.error!.message, /waited 5 s \(its load_timeout\) for a load permit/);
    assert.equal(h.manager.registry.current('b'), undefined, 'nothing of b is left');
    assert.equal(h.manager.registry.current('a')?.phase, 'loading', 'a still loads');
    await h.manager.close(0);
    await ahead.outcome;
  });

  it('a load waiting for room gives up at its own load_timeout (503)', async () => {
    const h = harness('model_cache=on\nmax_loaded_models=1\nmax_concurrent_loads=2\nmodel_load_timeout=3600', {
      autoLoad: false,
    });
    const ahead = await stuckLoad(h, 'a');
    const waiting = await armed(
      h,
      () => statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b'), loadTimeout: 5 })),
      "b's wait for room",
    );
    h.clock.advance(5000);
    const b = await waiting.outcome;
    assert.equal(b.code, 'MME_ERR_LOAD_WAIT_TIMEOUT');
    assert.equal(h.manager.registry.current('b'), undefined);
    await h.manager.close(0);
    await ahead.outcome;
  });

  it('DELETE of a load waiting for a load permit answers within unregister_model_timeout', async () => {
    const h = harness('max_concurrent_loads=1\nmodel_load_timeout=3600\nunregister_model_timeout=2', {
      autoLoad: false,
    });
    const ahead = await stuckLoad(h, 'a');
    const load = { outcome: statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b') })) };
    const unload = await armed(h, () => statusOf(h.manager.lifecycle.unload('b')), "the unload's bound");
    h.clock.advance(2000);
    const [unloaded, loaded] = await Promise.all([unload.outcome, load.outcome]);
    assert.equal(unloaded.code, 'MME_ERR_UNLOAD_TIMEOUT');
    assert.match(unloaded.error!.message, /still loading; the load was stopped and nothing is left of it/);
    assert.equal(loaded.code, 'MME_ERR_MODEL_CONFLICT');
    assert.equal(h.manager.registry.current('b'), undefined);
    await h.manager.close(0);
    await ahead.outcome;
  });
});
