/**
 * Memory admission (cache/admission.ts): a reservation fits the budget and max_loaded_models to the
 * byte, or is refused with a 507 that says what to change; with the cache on it first evicts, one
 * victim at a time in policy order, idle before busy, never one whose lock is taken or that is not
 * ready; stale measurements are refreshed first; two reservations never share the last bytes; a
 * load that fits once loads in progress settle waits for them, a scale does not.
 * Admission is a pure module: the registrations here are plain objects, the policy the real LRU,
 * time a virtual clock.
 */
import assert from 'node:assert/strict';
import { Admission, type AdmissionDeps, type Resident } from '../../../src/server/cache/admission';
import { ClassedPolicy } from '../../../src/server/cache/eviction-classes';
import { isMmeError } from '../../../src/errors';
import { VirtualClock } from '../../helpers/virtual-clock';
import { scanTally } from './scan-tally';
import { settle } from '../../helpers/settle';

const MiB = 2 ** 20;

class Entry implements Resident {
  phase: Resident['phase'] = 'ready';
  active = 0;
  held: number;
  admitted = false;
  model: {
    memoryBytes: number;
    memoryMeasuredAt: number;
    memoryMoves: boolean;
    refreshMemory(): Promise<number>;
  } | null = null;

  constructor(
    readonly name: string,
    bytes: number,
  ) {
    this.held = bytes;
  }

  get serving(): boolean {
    return this.phase === 'ready' || this.phase === 'failed';
  }

  get heldBytes(): number {
    return this.held + (this.model?.memoryBytes ?? 0);
  }

  get countsAsLoaded(): boolean {
    return this.serving || (this.phase === 'loading' && this.admitted);
  }

  reserve(bytes: number): void {
    this.held += bytes;
    if (this.phase === 'loading') this.admitted = true;
  }
}

interface Setup {
  admission: Admission<Entry>;
  entries: Map<string, Entry>;
  evicted: string[];
  locked: Set<string>;
  clock: VirtualClock;
  /** Settles what nextSettle gave: a load or a leaving entry has moved on (the test moved it first). */
  settle(): void;
  policy: ClassedPolicy;
}

/** Admission over `resident` models (admitted to an LRU in the order given), with `deps` overriding the defaults. */
function setup(resident: Entry[], deps: Partial<AdmissionDeps<Entry>> = {}): Setup {
  const clock = new VirtualClock();
  const policy = new ClassedPolicy('lru');
  const entries = new Map(resident.map((e) => [e.name, e]));
  resident.forEach((e, i) => policy.admit(e.name, e.heldBytes, 1000, i));
  clock.advance(resident.length);
  const evicted: string[] = [];
  const locked = new Set<string>();
  let settle = () => {};
  const nextSettle = () => new Promise<void>((resolve) => (settle = resolve));
  const admission = new Admission<Entry>({
    budgetBytes: 1000 * MiB,
    maxLoadedModels: 0,
    evicts: true,
    policy,
    clock,
    tally: scanTally(() => entries.values(), nextSettle),
    fixedBytes: () => 0,
    current: (name) => entries.get(name),
    tryLock: (name) => {
      if (locked.has(name)) return null;
      locked.add(name);
      return () => locked.delete(name);
    },
    evict: async (e) => {
      evicted.push(e.name);
      e.phase = 'gone';
      entries.delete(e.name);
      policy.remove(e.name);
    },
    ...deps,
  });
  return { admission, entries, evicted, locked, clock, settle: () => settle(), policy };
}

/** Reserves `bytes` for a new entry `name`; returns the error message, or null when admitted. */
async function reserve(s: Setup, name: string, bytes: number): Promise<string | null> {
  const e = s.entries.get(name) ?? new Entry(name, 0);
  e.phase = 'loading';
  s.entries.set(name, e);
  try {
    await s.admission.reserve(e, bytes, new AbortController().signal);
    return null;
  } catch (err) {
    assert.ok(isMmeError(err));
    assert.equal(err.status, 507);
    // The count is its own resource: the memory code means memory only.
    const counted = /models are loaded and max_loaded_models is/.test(err.message);
    assert.equal(err.code, counted ? 'MME_ERR_MODEL_LIMIT' : 'MME_ERR_INSUFFICIENT_MEMORY', err.message);
    return err.message;
  }
}

describe('memory admission (plain registrations, LRU, virtual clock)', () => {
  it('refuses a request larger than the whole budget with 507 before evicting anything', async () => {
    const s = setup(['a', 'b', 'c'].map((n) => new Entry(n, 300 * MiB)));
    assert.match(
      (await reserve(s, 'big', 1000 * MiB + 1))!,
      /would not fit with every other model evicted either, so none was/,
    );
    assert.deepEqual(s.evicted, []);
    assert.equal(s.entries.get('big')!.heldBytes, 0);
  });

  it('refuses a scale beyond what loading models leave of the budget before evicting anything', async () => {
    const loading = new Entry('loading', 600 * MiB);
    loading.phase = 'loading';
    loading.admitted = true;
    const s = setup([new Entry('a', 300 * MiB), loading]);
    const grow = new Entry('grow', 50 * MiB);
    s.entries.set('grow', grow);
    await assert.rejects(
      s.admission.reserve(grow, 400 * MiB, new AbortController().signal, { kind: 'scale', workers: 100_000 }),
      /cannot scale to 100000 workers.*Its workers are unchanged/,
    );
    assert.deepEqual(s.evicted, []);
  });

  it('admits a load that fills the budget to the byte and refuses one byte more, saying what to change', async () => {
    const s = setup([new Entry('a', 600 * MiB)], { evicts: false });
    assert.equal(
      await reserve(s, 'x', 400 * MiB + 1),
      'Model x does not fit: it needs about 400 MB and 600 MB of the 1000 MB model memory budget is in use. Unload a model (DELETE /models/{name}), or raise model_memory_budget_mb / max_loaded_models.',
    );
    assert.equal(s.entries.get('x')!.heldBytes, 0, 'a refused reservation holds nothing');
    assert.equal(await reserve(s, 'x', 400 * MiB), null);
    assert.equal(s.entries.get('x')!.heldBytes, 400 * MiB);
  });

  it("counts the hosts' own memory and refuses past max_loaded_models, counting loading models too", async () => {
    const s = setup([new Entry('a', 100 * MiB)], { evicts: false, maxLoadedModels: 2, fixedBytes: () => 500 * MiB });
    assert.match((await reserve(s, 'x', 401 * MiB))!, /about 401 MB and 600 MB of the 1000 MB/);
    assert.equal(await reserve(s, 'x', 10 * MiB), null);
    assert.match(
      (await reserve(s, 'y', 1))!,
      /^Model y does not fit: 2 models are loaded and max_loaded_models is 2\./,
    );
  });

  it('does not count loads still waiting for a load slot against max_loaded_models: they hold nothing yet', async () => {
    const s = setup([new Entry('a', 10 * MiB), new Entry('b', 10 * MiB)], { maxLoadedModels: 2 });
    for (const name of ['queued1', 'queued2']) {
      const e = new Entry(name, 0);
      e.phase = 'loading';
      s.entries.set(name, e);
    }
    assert.equal(await reserve(s, 'x', 10 * MiB), null);
    assert.deepEqual(s.evicted, ['a']);
    // x, admitted, counts now: the next load evicts b, and the queued ones still count for nothing.
    assert.equal(await reserve(s, 'queued1', 10 * MiB), null);
    assert.deepEqual(s.evicted, ['a', 'b']);
  });

  it('without the cache (SageMaker mode) too: queued loads do not make a load that fits answer 507', async () => {
    const s = setup([new Entry('a', 10 * MiB)], { maxLoadedModels: 2, evicts: false });
    for (const name of ['queued1', 'queued2']) {
      const e = new Entry(name, 0);
      e.phase = 'loading';
      s.entries.set(name, e);
    }
    assert.equal(await reserve(s, 'x', 10 * MiB), null);
    assert.match(
      (await reserve(s, 'queued1', 10 * MiB))!,
      /^Model queued1 does not fit: 2 models are loaded and max_loaded_models is 2\. Unload a model/,
    );
  });

  it('evicts idle models in policy order, one at a time, until the load fits, and no more', async () => {
    const s = setup([new Entry('a', 300 * MiB), new Entry('b', 300 * MiB), new Entry('c', 300 * MiB)]);
    assert.equal(await reserve(s, 'x', 500 * MiB), null);
    assert.deepEqual(s.evicted, ['a', 'b']);
    assert.deepEqual([...s.entries.keys()], ['c', 'x']);
    assert.equal(s.locked.size, 0, "every victim's lock was given back");
  });

  it('evicts an idle model before a busy one the policy ranks first', async () => {
    const busy = new Entry('a', 300 * MiB);
    busy.active = 1;
    const s = setup([busy, new Entry('b', 300 * MiB), new Entry('c', 300 * MiB)]);
    assert.equal(await reserve(s, 'x', 300 * MiB), null);
    assert.deepEqual(s.evicted, ['b']);
  });

  it('never evicts a model whose lock is taken or that is not ready, and then refuses with the busy-cache message', async () => {
    const failed = new Entry('b', 300 * MiB);
    failed.phase = 'failed';
    const s = setup([new Entry('a', 300 * MiB), failed, new Entry('c', 300 * MiB)]);
    s.locked.add('a');
    const message = await reserve(s, 'x', 500 * MiB);
    assert.deepEqual(s.evicted, ['c']);
    assert.equal(
      message,
      'Model x does not fit: it needs about 500 MB and 600 MB of the 1000 MB model memory budget is in use. No other model could be evicted now (each is loading, failed or held by an unload or a scale); retry later, or raise model_memory_budget_mb / max_loaded_models.',
    );
  });

  it('never evicts a pinned model: it evicts the others and the pinned one stays', async () => {
    const s = setup([new Entry('a', 300 * MiB), new Entry('b', 300 * MiB), new Entry('c', 300 * MiB)]);
    s.policy.admit('a', 300 * MiB, 1000, s.clock.now(), { pinned: true, evictionPriority: 'normal' });
    assert.equal(await reserve(s, 'x', 500 * MiB), null);
    assert.deepEqual(s.evicted, ['b', 'c']);
    assert.deepEqual([...s.entries.keys()], ['a', 'x']);
  });

  it('refuses at once, naming the pinned models, a load that would fit only by evicting them', async () => {
    const s = setup([new Entry('a', 500 * MiB), new Entry('b', 300 * MiB), new Entry('c', 100 * MiB)]);
    for (const name of ['a', 'b'])
      s.policy.admit(name, s.entries.get(name)!.heldBytes, 1000, s.clock.now(), {
        pinned: true,
        evictionPriority: 'normal',
      });
    assert.equal(
      await reserve(s, 'x', 300 * MiB),
      'Model x does not fit: it needs about 300 MB and 900 MB of the 1000 MB model memory budget is in use, and only evicting pinned models would make room, which the cache never does: a, b (2 pinned, 800 MB). Unload one of them (DELETE /models/{name}) or load it again without "pinned": true, or raise model_memory_budget_mb / max_loaded_models.',
    );
    assert.deepEqual(s.evicted, [], 'nothing was evicted for a load that could not fit');
    assert.equal(await reserve(s, 'y', 200 * MiB), null, 'a load that fits beside them evicts the unpinned one');
    assert.deepEqual(s.evicted, ['c']);
  });

  it('counts pinned models against max_loaded_models, and refuses a scale they block saying its workers are unchanged', async () => {
    const s = setup([new Entry('a', 10 * MiB), new Entry('b', 10 * MiB)], { maxLoadedModels: 2 });
    s.policy.admit('a', 10 * MiB, 1000, s.clock.now(), { pinned: true, evictionPriority: 'low' });
    s.policy.admit('b', 10 * MiB, 1000, s.clock.now(), { pinned: true, evictionPriority: 'high' });
    assert.match(
      (await reserve(s, 'x', MiB))!,
      /^Model x does not fit: 2 models are loaded and max_loaded_models is 2, and only evicting pinned models would make room, which the cache never does: a, b \(2 pinned, 20 MB\)\./,
    );
    const grow = s.entries.get('b')!;
    s.entries.get('a')!.held = 990 * MiB;
    await assert.rejects(
      s.admission.reserve(grow, 100 * MiB, new AbortController().signal, { kind: 'scale', workers: 2 }),
      /cannot scale to 2 workers: .*only evicting pinned models would make room.*: a \(1 pinned, 990 MB\)\. Its workers are unchanged; scale to fewer workers, or unload one of them/,
    );
    assert.deepEqual(s.evicted, []);
  });

  it('says the workers are unchanged when a scale-up is refused', async () => {
    const s = setup([new Entry('a', 900 * MiB)], { evicts: false });
    const a = s.entries.get('a')!;
    await assert.rejects(
      s.admission.reserve(a, 200 * MiB, new AbortController().signal, { kind: 'scale', workers: 3 }),
      (err: Error) => {
        assert.equal(
          err.message,
          'Model a cannot scale to 3 workers: the new workers need about 200 MB and 900 MB of the 1000 MB model memory budget is in use. Its workers are unchanged; scale to fewer workers, or unload a model (DELETE /models/{name}), or raise model_memory_budget_mb / max_loaded_models.',
        );
        return true;
      },
    );
    assert.equal(a.heldBytes, 900 * MiB);
  });

  it('re-measures a model whose figure is older than 5 s before deciding, and admits what the fresh figure leaves room for', async () => {
    const a = new Entry('a', 0);
    let refreshed = 0;
    a.model = {
      memoryBytes: 800 * MiB,
      memoryMeasuredAt: 0,
      memoryMoves: true,
      async refreshMemory() {
        refreshed++;
        this.memoryBytes = 300 * MiB;
        return this.memoryBytes;
      },
    };
    const s = setup([a], { evicts: false });
    s.clock.advance(5000 - s.clock.now());
    assert.notEqual(await reserve(s, 'x', 500 * MiB), null, 'a figure 5 s old is fresh: 800 MB leaves no room');
    assert.equal(refreshed, 0);
    s.clock.advance(1);
    assert.equal(await reserve(s, 'x', 500 * MiB), null);
    assert.equal(refreshed, 1);
  });

  it('a load that only fits once the loads in progress settle waits for them, then evicts one of them, never answering 507', async () => {
    const s = setup([], { maxLoadedModels: 2 });
    for (const name of ['l1', 'l2']) assert.equal(await reserve(s, name, 10 * MiB), null);
    let outcome: string | null | undefined;
    const x = reserve(s, 'x', 10 * MiB).then((o) => (outcome = o));
    // Both loads still hold their places: nothing to evict, so x waits, and nothing settles it but them.
    await settle();
    assert.equal(outcome, undefined);
    s.entries.get('l1')!.phase = 'ready';
    s.policy.admit('l1', 10 * MiB, 1000, s.clock.now());
    s.settle();
    await x;
    assert.equal(outcome, null);
    assert.deepEqual(s.evicted, ['l1']);
    assert.equal(s.entries.get('x')!.heldBytes, 10 * MiB);
  });

  it('a load that fits once a model being unloaded is gone waits for it, and evicts nothing it does not need to', async () => {
    const draining = new Entry('b', 300 * MiB);
    draining.phase = 'draining';
    const s = setup([new Entry('a', 300 * MiB), draining, new Entry('c', 300 * MiB)]);
    s.locked.add('a');
    const x = reserve(s, 'x', 500 * MiB);
    await settle();
    assert.deepEqual(s.evicted, ['c'], 'c was evicted; a is locked and b is leaving: x waits for b');
    s.entries.delete('b');
    s.settle();
    assert.equal(await x, null);
    assert.deepEqual(s.evicted, ['c']);
  });

  it('a scale is answered while a load waits for room: the wait does not hold the admission lock', async () => {
    const s = setup([new Entry('r', 10 * MiB)], { maxLoadedModels: 3 });
    for (const name of ['l1', 'l2']) assert.equal(await reserve(s, name, 10 * MiB), null);
    // r's name is held (by the scale below, as lifecycle-operations does): nothing to evict, x waits.
    s.locked.add('r');
    let outcome: string | null | undefined;
    const x = reserve(s, 'x', 10 * MiB).then((o) => (outcome = o));
    await s.admission.reserve(s.entries.get('r')!, 10 * MiB, new AbortController().signal, {
      kind: 'scale',
      workers: 2,
    });
    assert.equal(s.entries.get('r')!.heldBytes, 20 * MiB);
    assert.equal(outcome, undefined, 'x still waits');
    s.locked.delete('r');
    s.entries.get('l1')!.phase = 'ready';
    s.policy.admit('l1', 10 * MiB, 1000, s.clock.now());
    s.settle();
    await x;
    assert.equal(outcome, null);
  });

  it('a load waiting for room stops at its abort (its reason, no 507) and holds nothing', async () => {
    const s = setup([], { maxLoadedModels: 1 });
    assert.equal(await reserve(s, 'l1', 10 * MiB), null);
    const x = new Entry('x', 0);
    x.phase = 'loading';
    s.entries.set('x', x);
    const abort = new AbortController();
    const waiting = s.admission.reserve(x, 10 * MiB, abort.signal);
    abort.abort(new Error('unloaded meanwhile'));
    await assert.rejects(waiting, /unloaded meanwhile/);
    assert.equal(x.heldBytes, 0);
    assert.deepEqual(s.evicted, []);
  });

  it('a load that would not fit with every load settled and every model evicted, because failed models hold the room, is 507 at once', async () => {
    const failed = new Entry('f', 10 * MiB);
    failed.phase = 'failed';
    const s = setup([failed], { maxLoadedModels: 1 });
    assert.match(
      (await reserve(s, 'x', 1))!,
      /^Model x does not fit: 1 models are loaded and max_loaded_models is 1, and it would not fit/,
    );
  });

  it('serialises reservations: two loads never both take the last free megabytes', async () => {
    const s = setup([new Entry('a', 100 * MiB)], { evicts: false });
    const outcomes = await Promise.all([reserve(s, 'x', 500 * MiB), reserve(s, 'y', 500 * MiB)]);
    assert.deepEqual(
      outcomes.map((o) => o === null),
      [true, false],
    );
  });
});
