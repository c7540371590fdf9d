/**
 * The shared host pool (hosts/host-pool.ts): placement (least memory in use, a second copy of a
 * model in another host, max_models_per_worker), replacing a host that died (at once, then after a
 * back-off) and recycling (the models start in the new host before they leave the old one, which
 * stops once empty). Driven through the ModelManager on fake host processes that speak frames, on a
 * virtual clock; which host a model went to is read from the Load frames each process received.
 */
import assert from 'node:assert/strict';
import type { FakeProcess } from '../../lifecycle/fake-process';
import { processHarness, statusOf, invokeRequest, type ProcessHarness } from '../../lifecycle/harness';
import { waitFor } from '../../../harness/process-probes';
import { settle } from '../../helpers/settle';

/** Waits for `model`'s load to reach a host, answers it there and returns that host's process. */
async function loadIn(h: ProcessHarness, model: string): Promise<FakeProcess> {
  const holding = () => h.processes.live().find((p) => p.loads.some((l) => l.modelName === model));
  await waitFor(() => {
    h.clock.advance(0);
    return holding() !== undefined;
  }, `${model}'s load to reach a host`);
  const p = holding()!;
  while (p.loads[0].modelName !== model) p.load();
  p.load();
  return p;
}

/** Loads `model` and returns the process of the host it was placed in. */
async function place(h: ProcessHarness, model: string, minWorkers = 1): Promise<FakeProcess[]> {
  const loading = statusOf(h.manager.lifecycle.load({ modelName: model, url: h.model(model), minWorkers: minWorkers }));
  const hosts: FakeProcess[] = [];
  for (let i = 0; i < minWorkers; i++) hosts.push(await loadIn(h, model));
  assert.equal((await loading).status, 200);
  return hosts;
}

const index = (h: ProcessHarness, p: FakeProcess) => h.processes.all.indexOf(p);

describe('host pool (shared hosts on fake processes, virtual clock)', () => {
  it('starts shared_workers hosts and places each model in the one with the least in use, a second copy in the other host', async () => {
    const h = processHarness('worker_mode=shared\nshared_workers=2\nmodel_cache=off');
    await settle();
    assert.equal(h.processes.all.length, 0, 'no host starts before a model needs one');
    const [a] = await place(h, 'a');
    assert.equal(h.processes.all.length, 2);
    assert.equal(index(h, a), 0, 'a tie goes to the first host');
    const [b] = await place(h, 'b');
    assert.equal(index(h, b), 1, 'b goes to the empty host');
    const [c] = await place(h, 'c');
    assert.equal(index(h, c), 0);
    const twice = await place(h, 'd', 2);
    assert.deepEqual(twice.map((p) => index(h, p)).sort(), [0, 1], 'two copies of d, one per host');
    assert.deepEqual([...h.processes.all[0].slots].length, 3);
    assert.deepEqual([...h.processes.all[1].slots].length, 2);
    await h.manager.close(0);
  });

  it('refuses a model when every host holds max_models_per_worker, naming the key to raise', async () => {
    const h = processHarness('worker_mode=shared\nshared_workers=1\nmax_models_per_worker=1\nmodel_cache=off');
    await place(h, 'a');
    const b = await statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b') }));
    assert.equal(b.code, 'MME_ERR_NO_WORKER');
    assert.match(b.error!.message, /every one of the 1 hosts holds max_models_per_worker \(1\) models/);
    assert.equal(h.processes.all.length, 1, 'no host was started for it');
    assert.equal(h.manager.registry.registered('b'), false);
    await h.manager.close(0);
  });

  it('replaces a host that died at once and its model reloads there; a second death within 10 s waits 1 s for its host', async () => {
    const h = processHarness('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    const [first] = await place(h, 'a');
    first.exit(null, 'SIGKILL');
    const second = await loadIn(h, 'a');
    assert.equal(h.processes.all.length, 2);
    assert.notEqual(second, first);
    await waitFor(
      () => h.manager.registry.get('a').workers.some((w) => w.state === 'ready'),
      'a to be ready in the new host',
    );
    second.exit(null, 'SIGKILL');
    await waitFor(() => h.logs.some((l) => l.includes('a new host starts in 1 s')), 'the second death to be handled');
    h.clock.advance(999);
    await settle();
    assert.equal(h.processes.all.length, 2, 'no host before the back-off has passed');
    h.clock.advance(1);
    await waitFor(() => h.processes.all.length === 3, 'the host after the back-off');
    await loadIn(h, 'a');
    await h.manager.close(0);
  });

  it('recycles a host: its model loads in a new host before it leaves, a request it held is answered, and the old host stops once empty', async () => {
    const h = processHarness('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    const [old] = await place(h, 'a');
    const held = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => old.batches.length === 1, 'the request to reach the host');
    h.manager.workers.hosts!.recycle(h.manager.workers.hosts!.hosts[0]);
    assert.equal(h.logs.filter((l) => l.includes('] recycling: ')).length, 1);
    const fresh = await loadIn(h, 'a');
    assert.notEqual(fresh, old);
    await settle();
    assert.equal(old.alive, true, 'the old host still holds a request');
    old.answer();
    assert.equal((await held).status, 200);
    await waitFor(() => !old.alive, 'the old host to stop once empty');
    assert.deepEqual(h.processes.live(), [fresh]);
    const next = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => fresh.batches.length === 1, 'the next request to reach the new host');
    fresh.answer();
    assert.equal((await next).status, 200);
    await h.manager.close(0);
  });
});
