/**
 * A model whose replacement worker found no shared host with room waits on its restart back-off;
 * the host pool wakes it as soon as there is room, so it does not wait the back-off out. Fake
 * processes below HostPool, restart back-offs on a virtual clock that this test never advances
 * past the point where the room appears.
 */
import assert from 'node:assert/strict';
import { waitFor } from '../../harness/process-probes';
import { processHarness, statusOf } from './harness';
import type { FakeProcess } from './fake-process';

describe('lifecycle in shared hosts: a worker set waiting for room', () => {
  it('starts its worker as soon as a slot frees, without waiting out its back-off', async () => {
    const h = processHarness('worker_mode=shared\nshared_workers=2\nmax_models_per_worker=1\nmodel_cache=off');
    const processOf = (model: string): FakeProcess =>
      h.processes.live().find((p) => p.loads.some((l) => l.modelName === model))!;
    // A restart with no back-off still goes through a timer: time 0 of the virtual clock fires it.
    const restarted = (model: string) => {
      h.clock.advance(0);
      return processOf(model) !== undefined;
    };
    /** Finishes `model`'s load once it reaches a host; returns that host's process. */
    const loaded = async (model: string): Promise<FakeProcess> => {
      await waitFor(() => restarted(model), `${model}'s load to reach a host`);
      const p = processOf(model);
      p.load();
      return p;
    };
    const ready = (model: string) =>
      waitFor(() => h.manager.registry.get(model).workers.some((w) => w.state === 'ready'), `${model} to be ready`);
    const a = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    const hostOfA = await loaded('a');
    assert.equal((await a).status, 200);
    const b = statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b') }));
    const hostOfB = await loaded('b');
    assert.equal((await b).status, 200);

    // b's host dies: the pool starts a new one at once (its first restart has no back-off) and b
    // moves there. The pool's next restart backs off.
    hostOfB.exit(null, 'SIGKILL');
    await loaded('b');
    await ready('b');

    // a's host dies: no new host before the pool's back-off, and the one left holds b, its maximum.
    hostOfA.exit(null, 'SIGKILL');
    await waitFor(
      () => !restarted('a') && h.logs.some((l) => l.includes('[a] could not start a replacement worker')),
      "a's replacement to find no room",
    );
    assert.equal(processOf('a'), undefined);

    // Unloading b frees its slot: a loads there at once. Virtual time never passes 0 in this test,
    // so a's back-off (1 s by now) has not run.
    assert.equal((await statusOf(h.manager.lifecycle.unload('b'))).status, 200);
    await waitFor(() => processOf('a') !== undefined, "a's replacement to be placed in the slot b freed");
    assert.equal(h.clock.now(), 0);
    await loaded('a');
    await ready('a');
    await h.manager.close(0);
  });
});
