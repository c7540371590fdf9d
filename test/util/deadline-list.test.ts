/**
 * DeadlineList (src/util/deadline-list.ts) on the virtual clock: each unsettled item expires once
 * its deadline passes, in deadline order, with one timer for the soonest; settled items never
 * expire, and leave without waiting for it.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DeadlineList } from '../../src/util/deadline-list';
import { VirtualClock } from '../helpers/virtual-clock';

interface Item {
  name: string;
  deadline: number;
  settled: boolean;
}

const item = (name: string, deadline: number): Item => ({ name, deadline, settled: false });

describe('util/deadline-list: deadlines on one timer', () => {
  for (const kind of ['inOrder', 'anyOrder'] as const) {
    it(`${kind}: expires each unsettled item once its deadline passes, never a settled one, never early`, () => {
      const clock = new VirtualClock();
      const expired: string[] = [];
      const list = DeadlineList[kind](clock, (i: Item) => expired.push(`${i.name}@${clock.now()}`));
      const [a, b, c] = [item('a', 100), item('b', 200), item('c', 300)];
      for (const i of [a, b, c]) list.add(i);
      assert.equal(clock.pending, 1, 'one timer for the three');
      clock.advance(99);
      assert.deepEqual(expired, []);
      b.settled = true;
      clock.advance(1);
      assert.deepEqual(expired, ['a@100']);
      clock.advance(500);
      assert.deepEqual(expired, ['a@100', 'c@300'], 'b was settled: it never expires');
      assert.equal(clock.pending, 0, 'nothing left: no timer');
    });
  }

  it('anyOrder: a sooner deadline added later re-arms the timer for it, and expiries come in deadline order', () => {
    const clock = new VirtualClock();
    const expired: string[] = [];
    const list = DeadlineList.anyOrder<Item>(clock, (i) => expired.push(`${i.name}@${clock.now()}`));
    list.add(item('late', 1000));
    list.add(item('soon', 10));
    list.add(item('middle', 500));
    assert.equal(clock.pending, 1);
    clock.advance(2000);
    assert.deepEqual(expired, ['soon@10', 'middle@500', 'late@1000']);
  });

  it('drops settled items at the next addition, so a settled head does not hold the timer', () => {
    const clock = new VirtualClock();
    const expired: string[] = [];
    const list = DeadlineList.inOrder<Item>(clock, (i) => expired.push(i.name));
    const first = item('first', 100);
    list.add(first);
    first.settled = true;
    list.add(item('second', 50));
    // The settled head left: the timer is now for the second's deadline, not the first's.
    clock.advance(50);
    assert.deepEqual(expired, ['second']);
  });

  it('close() clears its timer: nothing expires after it', () => {
    const clock = new VirtualClock();
    const expired: string[] = [];
    const list = DeadlineList.anyOrder<Item>(clock, (i) => expired.push(i.name));
    list.add(item('a', 10));
    list.close();
    assert.equal(clock.pending, 0);
    clock.advance(100);
    assert.deepEqual(expired, []);
  });

  it('anyOrder: over any additions, settlements and time, expires exactly the unsettled items past their deadline, each once, in deadline order', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), after: fc.nat(300) }),
      fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(100) }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.nat(200) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 80 }), (ops) => {
        const clock = new VirtualClock();
        const expired: Array<{ i: Item; at: number }> = [];
        const list = DeadlineList.anyOrder<Item>(clock, (i) => expired.push({ i, at: clock.now() }));
        const all: Item[] = [];
        for (const o of ops) {
          if (o.kind === 'add') {
            const i = item(`i${all.length}`, clock.now() + o.after);
            all.push(i);
            list.add(i);
          } else if (o.kind === 'settle' && all.length > 0) {
            const i = all[o.pick % all.length];
            if (!expired.some((e) => e.i === i)) i.settled = true;
          } else if (o.kind === 'advance') clock.advance(o.ms);
        }
        clock.advance(1000);
        const due = all.filter((i) => !i.settled);
        assert.deepEqual(
          new Set(expired.map((e) => e.i)),
          new Set(due),
          'every unsettled item expired, no settled one',
        );
        assert.equal(expired.length, due.length, 'each once');
        for (const e of expired) assert.ok(e.at >= e.i.deadline, `${e.i.name} expired before its deadline`);
        const order = expired.map((e) => e.at);
        assert.deepEqual(
          order,
          [...order].sort((x, y) => x - y),
        );
      }),
    );
  });
});
