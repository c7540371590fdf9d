import assert from 'node:assert/strict';
import { collectGarbage } from '../helpers/gc';
import { Fifo } from '../../src/util/fifo';

describe('Fifo', () => {
  it('Fifo keeps order across shifts, put-backs, removals and compaction', () => {
    const q = new Fifo<number>();
    for (let i = 0; i < 5000; i++) q.push(i);
    for (let i = 0; i < 3000; i++) assert.equal(q.shift(), i);
    q.unshift([-2, -1]);
    assert.ok(q.remove(4000));
    assert.equal(q.length, 2001);
    assert.equal(q.peek(), -2);
    const rest = q.drainAll();
    assert.deepEqual(rest.slice(0, 3), [-2, -1, 3000]);
    assert.ok(!rest.includes(4000));
    assert.equal(rest.at(-1), 4999);
    assert.equal(q.shift(), undefined);
  });

  it('Fifo lets go of what it handed out, and prune drops the dead keeping order', async () => {
    // A taken item left in the array's dead prefix was the p99.9 stall: every scavenge copied a
    // thousand settled requests' contexts. Reachable only from the queue, it must be collectable.
    const q = new Fifo<{ n: number }>();
    let taken: WeakRef<{ n: number }> | null = null;
    (() => {
      for (let n = 0; n < 3; n++) q.push({ n });
      taken = new WeakRef(q.shift()!);
    })();
    await new Promise(setImmediate);
    collectGarbage();
    assert.equal(taken.deref(), undefined, 'the shifted item is garbage');
    q.push({ n: 3 });
    q.prune((item) => item.n % 2 === 1);
    assert.deepEqual(
      q.drainAll().map((i) => i.n),
      [2],
    );
  });
});
