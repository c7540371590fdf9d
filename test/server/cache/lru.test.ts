import assert from 'node:assert/strict';
import { createPolicy } from '../../../src/server/cache/policies';

describe('LRU eviction policy', () => {
  it('offers the least recently used model first', () => {
    const lru = createPolicy('lru');
    lru.admit('a', 100, 1000, 0);
    lru.admit('b', 10, 500, 1);
    lru.admit('c', 1000, 2000, 2);
    assert.deepEqual([...lru.victims(3)], ['a', 'b', 'c']);
    lru.touch('a', 4);
    assert.deepEqual([...lru.victims(5)], ['b', 'c', 'a']);
  });

  it('ignores size and load time', () => {
    const lru = createPolicy('lru');
    lru.admit('expensive', 1, 1_000_000, 0);
    lru.admit('cheap', 1_000_000, 1, 1);
    lru.resize('cheap', 10_000_000);
    assert.deepEqual([...lru.victims(2)], ['expensive', 'cheap']);
  });

  it('forgets removed models, ignores unknown ones, and re-admission counts as a use', () => {
    const lru = createPolicy('lru');
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
});
