/**
 * Model-based property test of the lifecycle: fast-check draws interleavings of load, unload,
 * invoke, on-demand load, eviction, scale, worker answers, worker crashes, load failures and
 * shutdown, runs them against the manager on fake workers, then lets everything finish and checks
 * the invariants against a small reference model of what must be true.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MmeError } from '../../src/errors';
import { harness, statusOf, wireRequest, type Harness } from './harness';
import { waitFor } from '../helpers/processes';

const names = ['m0', 'm1', 'm2'];

type Command =
  | { kind: 'load'; name: string }
  | { kind: 'unload'; name: string }
  | { kind: 'invoke'; name: string }
  | { kind: 'scale'; name: string; workers: number }
  | { kind: 'answer'; pick: number }
  | { kind: 'crash'; pick: number; signal: boolean }
  | { kind: 'finishLoad'; pick: number; ok: boolean }
  | { kind: 'tick' };

const name = fc.constantFrom(...names);
const pick = fc.nat(20);
const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ kind: fc.constant('load' as const), name }),
  fc.record({ kind: fc.constant('unload' as const), name }),
  fc.record({ kind: fc.constant('invoke' as const), name }),
  fc.record({ kind: fc.constant('invoke' as const), name }),
  fc.record({ kind: fc.constant('scale' as const), name, workers: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('answer' as const), pick }),
  fc.record({ kind: fc.constant('answer' as const), pick }),
  fc.record({ kind: fc.constant('crash' as const), pick, signal: fc.boolean() }),
  fc.record({ kind: fc.constant('finishLoad' as const), pick, ok: fc.boolean() }),
  fc.record({ kind: fc.constant('finishLoad' as const), pick, ok: fc.constant(true) }),
  fc.record({ kind: fc.constant('tick' as const) }),
);

interface Outcome {
  kind: Command['kind'];
  name: string;
  status: number;
  code?: string;
  /** Order of completion. */
  seq: number;
}

async function run(h: Harness, commands: Command[], shutdownAt: number | null): Promise<{ outcomes: Outcome[]; pending: Array<Promise<void>>; invokes: number }> {
  const outcomes: Outcome[] = [];
  const pending: Array<Promise<void>> = [];
  let seq = 0;
  let invokes = 0;
  const track = (kind: Command['kind'], n: string, p: Promise<unknown>) => {
    pending.push(statusOf(p).then((r) => {
      outcomes.push({ kind, name: n, status: r.status, code: r.code, seq: seq++ });
    }));
  };
  for (const [i, c] of commands.entries()) {
    if (i === shutdownAt) pending.push(h.manager.close(2000));
    const live = h.fleet.live();
    const w = live.length > 0 && 'pick' in c ? live[c.pick % live.length] : undefined;
    switch (c.kind) {
      case 'load': track('load', c.name, h.manager.load({ modelName: c.name, url: `${h.store}/${c.name}` })); break;
      case 'unload': track('unload', c.name, h.manager.unload(c.name)); break;
      case 'invoke': invokes++; track('invoke', c.name, h.manager.invoke(c.name, wireRequest())); break;
      case 'scale': track('scale', c.name, h.manager.scale(c.name, c.workers, c.workers, false)); break;
      case 'answer': if (w && w.batches.length > 0) w.answer(); break;
      case 'crash': w?.exit(c.signal ? 'SIGKILL' : null, c.signal ? null : 1); break;
      case 'finishLoad': if (w && !w.loaded) { if (c.ok) w.load(); else w.failLoad(new MmeError('MME_ERR_INVALID_MODEL', 'bad graph')); } break;
      default: await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setImmediate(r));
  }
  return { outcomes, pending, invokes };
}

/** Lets everything finish: every worker loads, every batch is answered, until all promises settled. */
async function quiesce(h: Harness, pending: Array<Promise<void>>): Promise<void> {
  let done = false;
  void Promise.all(pending).then(() => (done = true));
  await waitFor(() => {
    for (const w of h.fleet.live()) {
      if (!w.loaded && !w.loadError) w.load();
      if (w.batches.length > 0) w.answer();
    }
    return done;
    // Each step settles within a few ticks (the fakes act on the next one): look again soon.
  }, 'every request and operation to settle', 10_000, 1);
}

function checkInvariants(h: Harness, outcomes: Outcome[], invokes: number, shutDown: boolean, evicts: boolean): void {
  // Every admitted request answered exactly once (the promises settled; Job settles once).
  assert.equal(outcomes.filter((o) => o.kind === 'invoke').length, invokes);
  // No internal error anywhere: each failure has a reason the table names.
  for (const o of outcomes) assert.notEqual(o.code, 'MME_ERR_INTERNAL', JSON.stringify(o));
  assert.ok(!h.logs.some((l) => /illegal lifecycle transition|load failed: .*Error/.test(l)), h.logs.join('\n'));
  // No transition left pending; the worker processes are exactly those the registry holds.
  const registered = new Set<unknown>();
  for (const n of names) {
    const e = h.manager.entry(n);
    if (!e) continue;
    assert.ok(e.phase === 'ready' || e.phase === 'failed', `${n} is stuck in ${e.phase}`);
    for (const w of h.manager.get(n).workers) registered.add(w);
  }
  const live = h.fleet.live();
  for (const w of live) assert.ok(registered.has(w), `worker ${w.id} runs but no registered model holds it`);
  for (const w of registered) assert.ok(live.includes(w as never), 'a registered model holds a worker that has exited');
  if (shutDown) assert.equal(live.length, 0);
  // No stale registration takes over a reused name: a name is registered exactly when the last
  // load or unload of it to finish was a successful load (SageMaker mode: nothing is evicted).
  if (!shutDown && !evicts) {
    for (const n of names) {
      const last = outcomes.filter((o) => o.name === n && (o.kind === 'load' || o.kind === 'unload') && (o.status === 200 || o.status === 408)).at(-1);
      assert.equal(h.manager.registered(n), last?.kind === 'load' && last.status === 200, `${n}: last ${JSON.stringify(last)}`);
    }
  }
}

describe('lifecycle model-based property (fast-check, fake workers)', function () {
  this.timeout(240_000);

  it('SageMaker mode: every request answered once, no internal 500, nothing stuck, processes match the registry, names never taken over', async () => {
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), fc.option(fc.nat(40), { nil: null }), async (commands, shutdownAt) => {
      const h = harness('model_cache=off\ndefault_workers_per_model=1\nunregister_model_timeout=2', { autoLoad: false, memoryBytes: () => 1 });
      for (const n of names) h.model(n);
      const at = shutdownAt !== null && shutdownAt < commands.length ? shutdownAt : null;
      const { outcomes, pending, invokes } = await run(h, commands, at);
      await quiesce(h, pending);
      await waitFor(() => !h.fleet.live().some((w) => w.killedBy), 'killed workers to exit', 10_000, 1);
      checkInvariants(h, outcomes, invokes, at !== null, false);
      await h.manager.close(0);
      assert.equal(h.fleet.live().length, 0);
    }), { numRuns: 300 });
  });

  it('self-managed cache: on-demand loads and evictions keep the same invariants', async () => {
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60 }), async (commands) => {
      const h = harness('model_cache=on\nmax_loaded_models=2\nload_failure_cache_seconds=0\nunregister_model_timeout=2\neviction_drain_timeout=1', { autoLoad: false, memoryBytes: () => 1 });
      for (const n of names) h.model(n);
      const { outcomes, pending, invokes } = await run(h, commands, null);
      await quiesce(h, pending);
      await waitFor(() => !h.fleet.live().some((w) => w.killedBy), 'killed workers to exit', 10_000, 1);
      assert.ok(h.manager.list().length <= 2);
      checkInvariants(h, outcomes, invokes, false, true);
      await h.manager.close(0);
      assert.equal(h.fleet.live().length, 0);
    }), { numRuns: 300 });
  });
});
