/**
 * A load displaced by another model's host death is tried again in another host, by the worker
 * set's reconcile(), and the other model's load, which the death is blamed on, fails. Fake
 * processes below HostPool, on a virtual clock.
 */
import assert from 'node:assert/strict';
import { waitFor } from '../../harness/process-probes';
import { processHarness, statusOf } from './harness';

describe('lifecycle in shared hosts: a load displaced by a host death', () => {
  it('starts again in the new host and loads (200); the load the host was running fails (507)', async () => {
    const h = processHarness('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    const a = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
    const b = statusOf(h.manager.lifecycle.load({ modelName: 'b', url: h.model('b') }));
    await waitFor(() => h.processes.live()[0]?.loads.length === 2, 'both loads to reach the one host');
    const [host1] = h.processes.live();
    // The two loads race through artifact checks, so either may reach the host first. The host runs
    // loads in the order sent: its death is blamed on the first, and the second is displaced.
    const [first, second] = host1.loads.map((l) => l.modelName);
    const [blamed, displaced] = first === 'a' ? [a, b] : [b, a];
    host1.exit(null, 'SIGKILL');
    assert.equal((await blamed).status, 507);
    await waitFor(
      () => h.processes.live().length === 1 && h.processes.live()[0].loads.length === 1,
      `${second}'s second try to reach the new host`,
    );
    const [host2] = h.processes.live();
    assert.equal(host2.loads[0].modelName, second);
    host2.load();
    assert.equal((await displaced).status, 200);
    assert.ok(
      h.logs.some((l) =>
        new RegExp(`\\[${second}\\] its shared host died while it loaded, through no fault of this model`).test(l),
      ),
    );
    assert.equal(h.manager.registry.get(second).workers.length, 1);
    await h.manager.close(0);
  });
});
