/**
 * A model's worker set (workers/worker-set.ts): the target count, what a scale-down retires, and
 * the restart back-off after a death (Fibonacci seconds, reset once a replacement stays up, the
 * model marked failed after three failed restarts and ready again when one loads). Driven through
 * the ModelManager on fake worker processes in dedicated mode, on a virtual clock: a back-off
 * passes only when the test advances the clock.
 */
import assert from 'node:assert/strict';
import { kStableMs } from '../../../src/server/processes/backoff';
import type { FakeProcess } from '../../lifecycle/fake-process';
import { processHarness, statusOf, invokeRequest, type ProcessHarness } from '../../lifecycle/harness';
import { waitFor } from '../../../harness/process-probes';
import { settle } from '../../helpers/settle';

/** Model `a` loaded with `workers` dedicated workers that load at once. */
async function loaded(workers = 1): Promise<ProcessHarness> {
  const h = processHarness('', { autoLoad: true });
  await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a'), minWorkers: workers });
  return h;
}

/** Kills `p` unasked and waits until the set has handled its death (the `n`th "restarting" line). */
async function crash(h: ProcessHarness, p: FakeProcess, n: number): Promise<void> {
  p.exit(1, null);
  await waitFor(
    () => h.logs.filter((l) => l.includes('; restarting (exit reason:')).length === n,
    `death ${n} to be handled`,
  );
}

/** Advances the clock by `ms` and waits for a replacement process; returns it. */
async function restartAfter(h: ProcessHarness, ms: number): Promise<FakeProcess> {
  const before = h.processes.all.length;
  if (ms > 0) {
    h.clock.advance(ms - 1);
    await settle();
    assert.equal(h.processes.all.length, before, `no replacement ${ms - 1} ms into a ${ms} ms back-off`);
  }
  h.clock.advance(ms > 0 ? 1 : 0);
  await waitFor(() => h.processes.all.length === before + 1, `the replacement after ${ms} ms`);
  const p = h.processes.all.at(-1)!;
  await waitFor(() => h.manager.registry.get('a').workers.some((w) => w.state === 'ready'), 'the replacement to load');
  return p;
}

describe('worker set (fake processes, virtual clock)', () => {
  it('starts initial_workers, scale() adds exactly the missing ones, and a scale-down retires the idle workers and keeps the busy one', async () => {
    const h = await loaded(2);
    assert.equal(h.processes.live().length, 2);
    await h.manager.lifecycle.scale('a', 3, 3, true);
    assert.equal(h.processes.live().length, 3);
    assert.equal(h.manager.registry.get('a').workers.length, 3);
    const request = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await waitFor(() => h.processes.live().some((p) => p.batches.length === 1), 'the request to reach a worker');
    const busy = h.processes.live().find((p) => p.batches.length === 1)!;
    await h.manager.lifecycle.scale('a', 1, 1, true);
    assert.deepEqual(h.processes.live(), [busy], 'the two idle workers went, the busy one stayed');
    busy.answer();
    assert.equal((await request).status, 200);
    assert.equal(h.manager.registry.get('a').workers.length, 1);
    await h.manager.close(0);
  });

  it('replaces a worker that died unasked after 0, 1, 1 s; after three failed restarts the model is failed, and ready again once the one started after 2 s loads', async () => {
    const h = await loaded();
    await crash(h, h.processes.live()[0], 1);
    // The first restart has no back-off, yet runs on a timer: time 0 fires it.
    let p = await restartAfter(h, 0);
    for (const [n, backoffMs] of [
      [2, 1000],
      [3, 1000],
    ] as const) {
      await crash(h, p, n);
      p = await restartAfter(h, backoffMs);
    }
    assert.equal(h.manager.registry.current('a')!.phase, 'ready', 'two failed restarts do not fail the model');
    await crash(h, p, 4);
    await waitFor(() => h.manager.registry.current('a')!.phase === 'failed', 'the model to be marked failed');
    assert.ok(h.logs.some((l) => l.includes('replacement worker died (attempt 3)')));
    p = await restartAfter(h, 2000);
    await waitFor(() => h.manager.registry.current('a')!.phase === 'ready', 'the model to recover');
    await h.manager.close(0);
  });

  it('starts counting again once a replacement has stayed up kStableMs: the next death restarts at once', async () => {
    const h = await loaded();
    await crash(h, h.processes.live()[0], 1);
    await crash(h, await restartAfter(h, 0), 2);
    const second = await restartAfter(h, 1000);
    h.clock.advance(kStableMs);
    await settle();
    await crash(h, second, 3);
    await restartAfter(h, 0);
    await h.manager.close(0);
  });

  it('replaces nothing once stopped: a worker killed by an unload is not restarted', async () => {
    const h = await loaded(2);
    assert.equal((await statusOf(h.manager.lifecycle.unload('a'))).status, 200);
    h.clock.advance(60_000);
    await settle();
    assert.equal(h.processes.live().length, 0);
    assert.equal(h.processes.all.length, 2);
    assert.equal(h.logs.filter((l) => l.includes('restarting')).length, 0);
    await h.manager.close(0);
  });
});
