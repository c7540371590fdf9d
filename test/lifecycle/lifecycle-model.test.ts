/**
 * Model-based property test of the lifecycle: fast-check draws interleavings of load, unload,
 * invoke, on-demand load, eviction, scale, worker answers, worker crashes, load failures, time
 * passing (on a virtual clock: timeouts and back-offs) and shutdown, runs them against the manager on dedicated workers over fake processes, then lets everything finish and checks
 * the invariants against a small reference model of what must be true.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MmeError } from '../../src/errors';
import { waitFor } from '../../harness/process-probes';
import { harness, type Harness } from './harness';
import {
  checkNamesNeverTakenOver,
  checkRequestsAndRegistry,
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
  | { kind: 'crash'; pick: number; signal: boolean }
  | { kind: 'finishLoad'; pick: number; ok: boolean }
  | { kind: 'tick' };

const command: fc.Arbitrary<Command> = fc.oneof(
  ...registryCommands,
  fc.record({ kind: fc.constant('answer' as const), pick }),
  fc.record({ kind: fc.constant('answer' as const), pick }),
  fc.record({ kind: fc.constant('crash' as const), pick, signal: fc.boolean() }),
  fc.record({ kind: fc.constant('finishLoad' as const), pick, ok: fc.boolean() }),
  fc.record({ kind: fc.constant('finishLoad' as const), pick, ok: fc.constant(true) }),
  fc.record({ kind: fc.constant('tick' as const) }),
);

/** `maxLoaded`: checked before every command, never more models loaded or admitted to load than that. */
function run(h: Harness, commands: Command[], shutdownAt: number | null, maxLoaded = 0): Promise<Outcomes> {
  return runCommands(h.manager, h.store, commands, shutdownAt, async (c) => {
    if (maxLoaded > 0) {
      const counted = names.filter((n) => h.manager.registry.current(n)?.countsAsLoaded);
      assert.ok(counted.length <= maxLoaded, `loaded or admitted: ${counted.join(', ')}`);
    }
    const live = h.fleet.live();
    const w = live.length > 0 && 'pick' in c ? live[c.pick % live.length] : undefined;
    switch (c.kind) {
      case 'answer':
        if (w && w.batches.length > 0) w.answer();
        return true;
      case 'crash':
        w?.exit(c.signal ? 'SIGKILL' : null, c.signal ? null : 1);
        return true;
      case 'finishLoad':
        if (w && !w.slot.loaded) {
          if (c.ok) w.load();
          else w.failLoad(new MmeError('MME_ERR_INVALID_MODEL', 'bad graph'));
        }
        return true;
      case 'tick':
        h.clock.advance(1000);
        return true;
      default:
        return false;
    }
  });
}

/** Lets everything finish: every worker loads, every batch is answered, back-offs pass, until all promises settled. */
async function quiesce(h: Harness, pending: Array<Promise<void>>): Promise<void> {
  let done = false;
  void Promise.all(pending).then(() => (done = true));
  await waitFor(
    () => {
      for (const w of h.fleet.live()) {
        if (!w.slot.loaded && !w.slot.loadError) w.load();
        if (w.batches.length > 0) w.answer();
      }
      // A second at a time: the answers above go out before any response timeout is met.
      h.clock.advance(1000);
      return done && registrySettled(h.manager);
      // Each step settles within a few ticks (the fakes act on the next one): look again soon.
    },
    'every request and operation to settle',
    10_000,
    1,
  );
}

function checkInvariants(h: Harness, outcomes: Outcomes, shutDown: boolean, evicts: boolean): void {
  // The worker processes are exactly those the registry holds.
  const registered = new Set<unknown>();
  for (const model of checkRequestsAndRegistry(h.manager, h.logs, outcomes))
    for (const w of model.workers) registered.add(w);
  const live = h.fleet.live();
  for (const w of live) assert.ok(registered.has(w.slot), `worker ${w.id} runs but no registered model holds it`);
  for (const w of registered)
    assert.ok(
      live.some((l) => l.slot === w),
      'a registered model holds a worker that has exited',
    );
  if (shutDown) assert.equal(live.length, 0);
  // SageMaker mode: nothing is evicted.
  if (!shutDown && !evicts) checkNamesNeverTakenOver(h.manager, outcomes);
}

describe('lifecycle model-based property (fast-check, dedicated workers on fake processes)', function () {
  this.timeout(240_000);

  it('SageMaker mode: every request answered once, no internal 500, nothing stuck, processes match the registry, names never taken over', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(command, { minLength: 1, maxLength: 60 }),
        fc.option(fc.nat(40), { nil: null }),
        async (commands, shutdownAt) => {
          const h = harness('model_cache=off\ndefault_workers_per_model=1\nunregister_model_timeout=2', {
            autoLoad: false,
            memoryBytes: () => 1,
          });
          for (const n of names) h.model(n);
          const at = shutdownAt !== null && shutdownAt < commands.length ? shutdownAt : null;
          const outcomes = await run(h, commands, at);
          await quiesce(h, outcomes.pending);
          await waitFor(() => !h.fleet.live().some((w) => w.killedBy), 'killed workers to exit', 10_000, 1);
          checkInvariants(h, outcomes, at !== null, false);
          await h.manager.close(0);
          assert.equal(h.fleet.live().length, 0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('self-managed cache: on-demand loads and evictions keep the same invariants', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), async (commands) => {
        const h = harness(
          'model_cache=on\nmax_loaded_models=2\nload_failure_cache_seconds=0\nunregister_model_timeout=2\neviction_drain_timeout=1',
          { autoLoad: false, memoryBytes: () => 1 },
        );
        for (const n of names) h.model(n);
        const outcomes = await run(h, commands, null, 2);
        await quiesce(h, outcomes.pending);
        await waitFor(() => !h.fleet.live().some((w) => w.killedBy), 'killed workers to exit', 10_000, 1);
        assert.ok(h.manager.registry.servingCount() <= 2);
        checkInvariants(h, outcomes, false, true);
        await h.manager.close(0);
        assert.equal(h.fleet.live().length, 0);
      }),
      { numRuns: 300 },
    );
  });

  it('self-managed cache: a pinned model survives any sequence of loads, invokes, evictions, crashes and time', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), async (commands) => {
        const h = harness(
          'model_cache=on\nmax_loaded_models=2\nload_failure_cache_seconds=0\nunregister_model_timeout=2\neviction_drain_timeout=1\nmodel_idle_unload_seconds=3',
          { autoLoad: false, memoryBytes: () => 1 },
        );
        for (const n of [...names, 'pinned']) h.model(n);
        const loading = h.manager.lifecycle.load({ modelName: 'pinned', url: `${h.store}/pinned`, pinned: true });
        await waitFor(
          () => (
            h.fleet.live().forEach((w) => w.slot.loaded || w.load()),
            h.manager.registry.current('pinned')?.phase === 'ready'
          ),
          'the pinned model to load',
          10_000,
          1,
        );
        await loading;
        const outcomes = await run(h, commands, null, 2);
        await quiesce(h, outcomes.pending);
        // Crashes may leave it failed for a while (its workers restart); it is never evicted.
        assert.ok(['ready', 'failed'].includes(h.manager.registry.current('pinned')!.phase));
        // Nor unloaded for idleness, while the others are (model_idle_unload_seconds=3).
        assert.ok(!h.logs.some((l) => /^\[pinned\] (evicted|unloaded)/.test(l)), h.logs.join('\n'));
        assert.ok(h.manager.registry.servingCount() <= 2);
        await h.manager.close(0);
      }),
      { numRuns: 200 },
    );
  });
});
