/**
 * The spare worker's hand-off (src/server/workers/spare-pool.ts) on fake processes and the virtual
 * clock: at most one process starts per load. A load that finds the spare still starting takes it
 * instead of starting another; the replacement spare starts only once no load waits for a process
 * to start; a load whose process fails or dies while it waits gets its answer, and no process is
 * left behind. Each fake process says Started only when the test starts it.
 */
import assert from 'node:assert/strict';
import { waitFor } from '../../harness/process-probes';
import type { HostProcess } from '../../src/server/hosts/host-process';
import type { FakeProcess } from './fake-process';
import { processHarness, statusOf, type ProcessHarness } from './harness';

/** The refill's delay after a load's outcome (kRefillAfterMs). */
const kRefillMs = 50;

function spareHarness(
  properties = '',
  readMemory?: (pid: number) => Promise<number>,
): ProcessHarness & { load(name: string): ReturnType<typeof statusOf> } {
  const h = processHarness(`spare_workers=1\n${properties}`, { autoStart: false }, readMemory);
  return { ...h, load: (name) => statusOf(h.manager.lifecycle.load({ modelName: name, url: h.model(name) })) };
}

/** Resolves once the server has given `p` a model to load (before or after it started). */
async function admitted(h: ProcessHarness, p: FakeProcess, what: string): Promise<void> {
  const hosts = () => [...h.registry.live] as HostProcess[];
  await waitFor(() => hosts().some((host) => host.pid === p.pid && host.slotCount === 1), what);
}

/** Loads `name` into the started process `p` (a spare, or one given back). */
async function loadInto(h: ReturnType<typeof spareHarness>, p: FakeProcess, name: string): Promise<void> {
  const loads = p.loads.length;
  const loading = h.load(name);
  await waitFor(() => p.loads.length === loads + 1, `the Load of ${name} in process ${p.pid}`);
  p.load();
  assert.equal((await loading).status, 200);
}

/** The server's spare has started; one model loaded into it and unloaded again, with the refill started meanwhile. */
async function loadAndUnload(h: ReturnType<typeof spareHarness>): Promise<FakeProcess> {
  const [spare] = h.processes.all;
  spare.start();
  await loadInto(h, spare, 'a');
  h.clock.advance(kRefillMs);
  assert.equal(h.processes.all.length, 2, 'the refill starts its spare once the load is over');
  await h.manager.lifecycle.unload('a');
  return spare;
}

/** Shutdown leaves no process: every fake process the server started has exited. */
async function closeAll(h: ProcessHarness): Promise<void> {
  await h.manager.close(0);
  assert.deepEqual(h.processes.live(), [], 'a process outlived the server');
}

describe('spare hand-off (fake processes, virtual clock): one process start at most per load', () => {
  it('a load that finds the spare starting takes it; the replacement starts only once that load has loaded', async () => {
    const h = spareHarness();
    assert.equal(h.processes.all.length, 1, 'the pool starts its spare with the server');
    const [spare] = h.processes.all;
    const loading = h.load('a');
    await admitted(h, spare, 'the load to take the spare still starting');
    h.clock.advance(10_000);
    assert.equal(h.processes.all.length, 1, 'no second process starts while the load waits for the spare');
    spare.start();
    await waitFor(() => spare.loads.length === 1, 'the Load once the spare has started');
    h.clock.advance(10_000);
    assert.equal(h.processes.all.length, 1, 'no replacement starts while the load is in the spare');
    spare.load();
    assert.equal((await loading).status, 200);
    h.clock.advance(kRefillMs - 1);
    assert.equal(h.processes.all.length, 1, 'the load answers before the replacement starts');
    h.clock.advance(1);
    assert.equal(h.processes.all.length, 2, 'the replacement spare starts once the load is over');
    await closeAll(h);
  });

  it('a load that finds no spare starts one process, and no spare starts beside it until it has loaded', async () => {
    const h = spareHarness();
    const [spare] = h.processes.all;
    spare.start();
    const a = h.load('a');
    await waitFor(() => spare.loads.length === 1, 'the Load in the started spare');
    spare.load();
    assert.equal((await a).status, 200);
    // Back to back: the next load comes before the replacement spare has started.
    const b = h.load('b');
    await waitFor(() => h.processes.all.length === 2, "the second load's own process");
    const own = h.processes.all[1];
    await admitted(h, own, 'the second load in its own process');
    h.clock.advance(10_000);
    assert.equal(h.processes.all.length, 2, 'no spare starts beside the process a load waits for');
    own.start();
    await waitFor(() => own.loads.length === 1, 'the Load in its own process');
    own.load();
    assert.equal((await b).status, 200);
    h.clock.advance(kRefillMs);
    assert.equal(h.processes.all.length, 3, 'the spare starts once no load waits for a process');
    await closeAll(h);
  });

  it('a spare that dies while a load waits for it: the load fails naming the exit, and the pool starts a new spare', async () => {
    const h = spareHarness();
    const [spare] = h.processes.all;
    const loading = h.load('a');
    await admitted(h, spare, 'the load to take the spare still starting');
    spare.exit(1, null);
    const r = await loading;
    assert.equal(r.code, 'MME_ERR_LOAD_FAILED');
    assert.match(r.error!.message, /exited with code 1 while loading the model/);
    assert.equal(h.manager.registry.registered('a'), false, 'the failed load left its name registered');
    h.clock.advance(kRefillMs);
    assert.equal(h.processes.live().length, 1, 'one new spare, nothing else');
    assert.notEqual(h.processes.live()[0], spare);
    await closeAll(h);
  });

  it('a load that fails in the spare it waited for: its error comes back, the process is stopped, a new spare starts', async () => {
    const h = spareHarness();
    const [spare] = h.processes.all;
    const loading = h.load('a');
    await admitted(h, spare, 'the load to take the spare still starting');
    spare.start();
    await waitFor(() => spare.loads.length === 1, 'the Load once the spare has started');
    spare.load('bad graph');
    const r = await loading;
    assert.equal(r.code, 'MME_ERR_INVALID_MODEL');
    await waitFor(() => !spare.alive, 'the failed load to stop its process');
    assert.equal(h.processes.all.length, 1, 'no replacement while the failed load was in the spare');
    h.clock.advance(kRefillMs);
    assert.equal(h.processes.live().length, 1, 'one new spare, nothing else');
    assert.notEqual(h.processes.live()[0], spare);
    await closeAll(h);
  });

  it('an unloaded model gives its process back as the spare: the next load starts no process', async () => {
    const h = spareHarness();
    const spare = await loadAndUnload(h);
    const refill = h.processes.all[1];
    assert.ok(spare.alive, 'the process the model was unloaded from was stopped');
    await waitFor(() => !refill.alive, 'the spare still starting to be stopped: the process given back replaces it');
    await loadInto(h, spare, 'b');
    assert.equal(h.processes.all.length, 2, 'a process started for a load that had one given back');
    await closeAll(h);
  });

  it('a process given back that kept more than 32 MiB of its model is stopped, and a new spare starts', async () => {
    const mib = 1024 * 1024;
    let unloaded = false;
    // What the process measures once started, and after its model's unload: 40 MiB kept.
    const h = spareHarness('', async () => (unloaded ? 140 : 100) * mib);
    const [spare] = h.processes.all;
    spare.start();
    await loadInto(h, spare, 'a');
    h.clock.advance(kRefillMs);
    unloaded = true;
    await h.manager.lifecycle.unload('a');
    await waitFor(() => !spare.alive, 'the process that kept its model to be stopped');
    assert.ok(
      h.logs.some((l) => /kept 40 MiB of the model it unloaded; stopped rather than kept as a spare/.test(l)),
      'no log line says why the process was stopped',
    );
    assert.equal(h.processes.live().length, 1, 'one spare left: the one started in its place');
    await closeAll(h);
  });

  it("a custom handler's process is not given back: its module state could outlive the model", async () => {
    const h = spareHarness('default_service_handler=handler.js');
    const spare = await loadAndUnload(h);
    await waitFor(() => !spare.alive, 'the process of a model with a handler to be stopped');
    assert.ok(h.processes.all[1].alive, 'the spare starting was stopped though nothing replaced it');
    await closeAll(h);
  });

  it('the process given back fills the pool in place of the refill: load/unload churn starts no process', async () => {
    const h = spareHarness();
    const [spare] = h.processes.all;
    spare.start();
    await loadInto(h, spare, 'a');
    h.clock.advance(10);
    await h.manager.lifecycle.unload('a');
    h.clock.advance(10);
    await loadInto(h, spare, 'b');
    // The refill after a's load would fall due now, while b holds the process a gave back.
    h.clock.advance(kRefillMs - 20);
    assert.equal(h.processes.all.length, 1, "a's refill started a process though a gave its own back");
    await h.manager.lifecycle.unload('b');
    h.clock.advance(kRefillMs);
    assert.equal(h.processes.all.length, 1, 'a process started though the pool has its spare');
    await closeAll(h);
  });
});
