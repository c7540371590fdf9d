import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ClassedPolicy } from '../../../src/server/cache/eviction-classes';

describe('LRU eviction policy', () => {
  it('offers the least recently used model first', () => {
    const lru = new ClassedPolicy('lru');
    lru.admit('a', 100, 1000, 0);
    lru.admit('b', 10, 500, 1);
    lru.admit('c', 1000, 2000, 2);
    assert.deepEqual([...lru.victims(3)], ['a', 'b', 'c']);
    lru.touch('a', 4);
    assert.deepEqual([...lru.victims(5)], ['b', 'c', 'a']);
  });

  it('ignores size and load time', () => {
    const lru = new ClassedPolicy('lru');
    lru.admit('expensive', 1, 1_000_000, 0);
    lru.admit('cheap', 1_000_000, 1, 1);
    lru.resize('cheap', 10_000_000);
    assert.deepEqual([...lru.victims(2)], ['expensive', 'cheap']);
  });

  it('forgets removed models, ignores unknown ones, and re-admission counts as a use', () => {
    const lru = new ClassedPolicy('lru');
    lru.admit('a', 1, 1, 0);
    lru.admit('b', 1, 1, 1);
    lru.admit('c', 1, 1, 2);
    lru.remove('c');
    lru.touch('z', 3);
    lru.remove('z');
    assert.deepEqual([...lru.victims(4)], ['a', 'b']);
    lru.admit('a', 1, 1, 5);
    assert.deepEqual([...lru.victims(6)], ['b', 'a']);
  });

  it('property: its order is the simple list of names, oldest use first, through any mix of operations', () => {
    const name = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    const op = fc.oneof(fc.record({ admit: name }), fc.record({ touch: name }), fc.record({ remove: name }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 100 }), (ops) => {
        const lru = new ClassedPolicy('lru');
        let order: string[] = [];
        for (const o of ops) {
          if ('admit' in o) {
            lru.admit(o.admit, 1, 1, 0);
            order = [...order.filter((n) => n !== o.admit), o.admit];
          } else if ('touch' in o) {
            lru.touch(o.touch, 0);
            if (order.includes(o.touch)) order = [...order.filter((n) => n !== o.touch), o.touch];
          } else {
            lru.remove(o.remove);
            order = order.filter((n) => n !== o.remove);
          }
          assert.deepEqual([...lru.victims()], order);
          assert.equal(lru.size, order.length);
        }
      }),
    );
  });
});
