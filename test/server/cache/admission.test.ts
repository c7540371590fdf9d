import assert from 'node:assert/strict';
import { Admission, type Resident } from '../../../src/server/cache/admission';
import { LruPolicy } from '../../../src/server/cache/lru';
import { realClock } from '../../../src/util/clock';

const MiB = 2 ** 20;

class Entry implements Resident {
  registered = true;
  active = 0;
  model = null;
  constructor(readonly name: string, public heldBytes: number, public phase: Resident['phase'] = 'ready') {}
  reserve(bytes: number): void {
    this.heldBytes += bytes;
  }
}

/** Admission over `residents` (each ready, in LRU order), recording what it evicts. */
function admissionOver(residents: Entry[], limits: { budgetBytes: number; maxLoadedModels?: number }) {
  const entries = new Map(residents.map((e) => [e.name, e]));
  const policy = new LruPolicy();
  for (const e of residents) policy.admit(e.name);
  const evicted: string[] = [];
  const admission = new Admission<Entry>({
    budgetBytes: limits.budgetBytes,
    maxLoadedModels: limits.maxLoadedModels ?? 0,
    evicts: true,
    policy,
    clock: realClock,
    entries: () => entries.values(),
    fixedBytes: () => 0,
    current: (name) => entries.get(name),
    tryLock: () => () => {},
    evict: async (e) => {
      evicted.push(e.name);
      entries.delete(e.name);
      policy.remove(e.name);
    },
  });
  return { admission, entries, evicted };
}

describe('memory admission', () => {
  it('refuses a request larger than the whole budget with 507 before evicting anything', async () => {
    const residents = ['a', 'b', 'c'].map((n) => new Entry(n, 100 * MiB));
    const { admission, entries, evicted } = admissionOver(residents, { budgetBytes: 400 * MiB });
    const big = new Entry('big', 0, 'loading');
    entries.set('big', big);
    await assert.rejects(admission.reserve(big, 401 * MiB, new AbortController().signal), (err: Error & { status?: number }) => {
      assert.equal(err.status, 507);
      assert.match(err.message, /would not fit with every other model evicted either, so none was/);
      return true;
    });
    assert.deepEqual(evicted, []);
    assert.equal(big.heldBytes, 0);
  });

  it('refuses a scale beyond what loading models leave of the budget before evicting anything', async () => {
    const residents = [new Entry('a', 100 * MiB), new Entry('loading', 250 * MiB, 'loading')];
    const { admission, entries, evicted } = admissionOver(residents, { budgetBytes: 400 * MiB });
    const grow = new Entry('grow', 50 * MiB);
    entries.set('grow', grow);
    await assert.rejects(admission.reserve(grow, 150 * MiB, new AbortController().signal, { kind: 'scale', workers: 100_000 }), /cannot scale to 100000 workers.*Its workers are unchanged/);
    assert.deepEqual(evicted, []);
  });

  it('still evicts, least recently used first, for a request that fits once others are gone', async () => {
    const residents = ['a', 'b', 'c'].map((n) => new Entry(n, 100 * MiB));
    const { admission, entries, evicted } = admissionOver(residents, { budgetBytes: 400 * MiB });
    const next = new Entry('next', 0, 'loading');
    entries.set('next', next);
    await admission.reserve(next, 250 * MiB, new AbortController().signal);
    assert.deepEqual(evicted, ['a', 'b']);
    assert.equal(next.heldBytes, 250 * MiB);
  });
});
