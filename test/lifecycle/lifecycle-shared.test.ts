/**
 * The model-based property test in shared mode, with the fake below the process class: fast-check
 * draws interleavings of load, unload, invoke, scale, loads finishing or failing in the host,
 * batches answered, host crashes, recycling and a load beside a host crash. HostPool, placement,
 * HostProcess and ModelSlot run as they are, over fake processes that speak frames; restart
 * back-offs run on virtual time. Then everything is let finish and the invariants are checked.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { waitFor } from '../../harness/process-probes';
import type { ModelSlot } from '../../src/server/hosts/model-slot';
import { processHarness, type ProcessHarness } from './harness';
import {
  checkNamesNeverTakenOver,
  checkRequestsAndRegistry,
  name,
  names,
  pick,
  registryCommands,
  registrySettled,
  runCommands,
  type Outcomes,
  type RegistryCommand,
} from './property';

type Command =
  | RegistryCommand
  | { kind: 'answer'; pick: number }
  | { kind: 'finishLoad'; pick: number; ok: boolean }
  | { kind: 'hostCrash'; pick: number; signal: boolean }
  | { kind: 'recycle'; pick: number }
  | { kind: 'loadBesideCrash'; name: string; pick: number }
  | { kind: 'tick' };

const command: fc.Arbitrary<Command> = fc.oneof(
  ...registryCommands,
  fc.record({ kind: fc.constant('answer' as const), pick }),
  fc.record({ kind: fc.constant('answer' as const), pick }),
  fc.record({ kind: fc.constant('finishLoad' as const), pick, ok: fc.boolean() }),
  fc.record({ kind: fc.constant('finishLoad' as const), pick, ok: fc.constant(true) }),
  fc.record({ kind: fc.constant('hostCrash' as const), pick, signal: fc.boolean() }),
  fc.record({ kind: fc.constant('recycle' as const), pick }),
  fc.record({ kind: fc.constant('loadBesideCrash' as const), name, pick }),
  fc.record({ kind: fc.constant('tick' as const) }),
);

/**
 * Seed 1876983319's run, which hung: m0's request runs in a host being recycled when m1's load
 * evicts m0. Its Unload must wait for that request's batch, as the real worker's does; the fake
 * host answered it at once, the host retired with the batch unanswered, and the request never settled.
 */
const kEvictedWhileRunning: Command[] = [
  { kind: 'invoke', name: 'm0' },
  { kind: 'finishLoad', pick: 1, ok: true },
  { kind: 'recycle', pick: 3 },
  { kind: 'invoke', name: 'm1' },
  { kind: 'tick' },
  { kind: 'unload', name: 'm0' },
];

function run(h: ProcessHarness, commands: Command[], shutdownAt: number | null): Promise<Outcomes> {
  return runCommands(h.manager, h.store, commands, shutdownAt, (c, outcomes) => {
    const live = h.processes.live();
    const p = live.length > 0 && 'pick' in c ? live[c.pick % live.length] : undefined;
    const hosts = h.manager.workers.hosts?.hosts ?? [];
    switch (c.kind) {
      case 'answer':
        p?.answer();
        return true;
      case 'finishLoad':
        p?.load(c.ok ? undefined : 'bad graph');
        return true;
      case 'hostCrash':
        p?.exit(c.signal ? null : 1, c.signal ? 'SIGKILL' : null);
        return true;
      case 'recycle':
        if (hosts.length > 0) h.manager.workers.hosts!.recycle(hosts[c.pick % hosts.length]);
        return true;
      case 'loadBesideCrash':
        outcomes.start({ kind: 'load', name: c.name });
        p?.exit(null, 'SIGKILL');
        return true;
      case 'tick':
        h.clock.advance(1000);
        return true;
      default:
        return false;
    }
  });
}

/** Lets everything finish: every load succeeds, every batch is answered, back-offs pass, until all promises settled. */
async function quiesce(h: ProcessHarness, pending: Array<Promise<void>>, shutDown: boolean): Promise<void> {
  let done = false;
  void Promise.all(pending).then(() => (done = true));
  // One step: what the processes were sent is answered, then a second passes; a frame still on
  // its way would need 120 steps to meet model_load_timeout (or 60 the response timeout).
  const step = () => {
    for (const p of h.processes.live()) {
      while (p.loads.length > 0) p.load();
      p.answerHeld();
    }
    h.clock.advance(1000);
  };
  await waitFor(
    () => {
      step();
      return done && registrySettled(h.manager);
      // Each step settles within a few ticks: look again soon.
    },
    'every request and operation to settle',
    20_000,
    1,
  );
  // A scale-down or a move is admitted before it is done: retired slots are released, their
  // successors load, retired and killed hosts exit, on the next ticks.
  const hosts = () => h.manager.workers.hosts?.hosts ?? [];
  await waitFor(
    () => {
      step();
      const settled = hosts().every(
        (host) =>
          (host.killedBy === null || host.exitInfo !== null) &&
          host.slots.every((s) => !['loading', 'stopping'].includes(s.state)),
      );
      return settled && h.processes.live().length === (shutDown ? 0 : hosts().length);
    },
    'retired slots to be released, loads to finish and retired and killed hosts to exit',
    20_000,
    1,
  );
}

function checkInvariants(h: ProcessHarness, outcomes: Outcomes, shutDown: boolean): void {
  // The registry's placements: every worker of every registered model, a slot in a live host.
  const placed = new Set<ModelSlot>();
  for (const model of checkRequestsAndRegistry(h.manager, h.logs, outcomes))
    for (const w of model.workers) placed.add(w);
  if (shutDown) {
    assert.equal(h.processes.live().length, 0);
    return;
  }
  const hosts = h.manager.workers.hosts?.hosts ?? [];
  for (const w of placed) {
    const host = hosts.find((h) => h === w.host);
    assert.ok(host?.exitInfo === null, `${w.id} is placed in ${w.sharedHostId}, which is gone`);
  }
  for (const host of hosts) {
    // A host's slots are exactly the registry's placements in it…
    assert.deepEqual(
      new Set(host.slots),
      new Set([...placed].filter((w) => w.host === host)),
      `${host.id}: its slots and the registry's placements differ`,
    );
    // …and exactly what its process holds loaded.
    const fake = h.processes.all[Number(host.id.slice('host-'.length)) - 1];
    assert.deepEqual(
      [...fake.slots].sort(),
      host.slots.map((s) => s.slotId).sort(),
      `${host.id}: the process holds other slots than the server thinks`,
    );
    // The tallies placement reads instead of walking every slot agree with the slots themselves.
    const loaded = host.slots.filter((m) => m.loaded);
    assert.equal(host.policy.loadedCount, loaded.length, `${host.id}: loadedCount`);
    assert.equal(
      host.policy.modelBytes,
      loaded.reduce((n, m) => n + m.memoryBytes, 0),
      `${host.id}: modelBytes`,
    );
    for (const m of host.slots)
      assert.ok(host.policy.holdsModel(m.modelName), `${host.id}: holdsModel(${m.modelName})`);
  }
  checkNamesNeverTakenOver(h.manager, outcomes);
}

describe('lifecycle model-based property in shared hosts (fast-check, fake processes below HostPool)', function () {
  this.timeout(240_000);

  it("every request answered once, no internal 500, nothing stuck, each host's slots equal the registry's placements and what its process holds", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(command, { minLength: 1, maxLength: 60 }),
        fc.option(fc.nat(40), { nil: null }),
        async (commands, shutdownAt) => {
          const h = processHarness('worker_mode=shared\nshared_workers=2\nmodel_cache=off\nunregister_model_timeout=2');
          for (const n of names) h.model(n);
          const at = shutdownAt !== null && shutdownAt < commands.length ? shutdownAt : null;
          const outcomes = await run(h, commands, at);
          await quiesce(h, outcomes.pending, at !== null);
          checkInvariants(h, outcomes, at !== null);
          await h.manager.close(0);
          await waitFor(() => h.processes.live().length === 0, 'every host to exit', 10_000, 1);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('self-managed cache: a pinned model in a shared host survives any sequence of loads, evictions, host crashes and recycling', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), async (commands) => {
        const h = processHarness(
          'worker_mode=shared\nshared_workers=2\nmodel_cache=on\nmax_loaded_models=2\nload_failure_cache_seconds=0\nunregister_model_timeout=2\neviction_drain_timeout=1\nmodel_idle_unload_seconds=3',
        );
        for (const n of [...names, 'pinned']) h.model(n);
        const loading = h.manager.lifecycle.load({ modelName: 'pinned', url: `${h.store}/pinned`, pinned: true });
        await waitFor(
          () => {
            for (const p of h.processes.live()) while (p.loads.length > 0) p.load();
            return h.manager.registry.current('pinned')?.phase === 'ready';
          },
          'the pinned model to load',
          10_000,
          1,
        );
        await loading;
        const outcomes = await run(h, commands, null);
        await quiesce(h, outcomes.pending, false);
        // A host crash may leave it failed while it reloads elsewhere; it is never evicted.
        assert.ok(['ready', 'failed'].includes(h.manager.registry.current('pinned')!.phase));
        // Nor unloaded for idleness, while the others are (model_idle_unload_seconds=3).
        assert.ok(!h.logs.some((l) => /^\[pinned\] (evicted|unloaded)/.test(l)), h.logs.join('\n'));
        assert.ok(h.manager.registry.servingCount() <= 2);
        await h.manager.close(0);
        await waitFor(() => h.processes.live().length === 0, 'every host to exit', 10_000, 1);
      }),
      { numRuns: 200, examples: [[kEvictedWhileRunning]] },
    );
  });
});
