/**
 * Eviction classes (cache/eviction-classes.ts) over both policies: every low model goes before any
 * normal one and every normal before any high, each class in its own policy's order; a pinned model
 * is never offered; a model loaded again takes its new class.
 */
import assert from 'node:assert/strict';
import type { Standing } from '../../../src/server/cache/eviction-policy';
import { ClassedPolicy, type PolicyName } from '../../../src/server/cache/eviction-classes';

const MiB = 2 ** 20;
const low: Standing = { pinned: false, evictionPriority: 'low' };
const normal: Standing = { pinned: false, evictionPriority: 'normal' };
const high: Standing = { pinned: false, evictionPriority: 'high' };
const pinned: Standing = { pinned: true, evictionPriority: 'low' };

for (const name of ['lru', 'gdsf'] as PolicyName[]) {
  describe(`eviction classes over ${name}`, () => {
    it('offers every low model before any normal one and every normal before any high, whatever their use', () => {
      const p = new ClassedPolicy(name);
      p.admit('h', 10 * MiB, 1000, 0, high);
      p.admit('n', 10 * MiB, 1000, 1, normal);
      p.admit('l', 10 * MiB, 1000, 2, low);
      // The low model is the most recently and most often used: its class still puts it first.
      for (let t = 3; t < 20; t++) p.touch('l', t);
      assert.deepEqual([...p.victims(20)], ['l', 'n', 'h']);
      assert.equal(p.size, 3);
    });

    it('ranks within a class by its policy: the least used of two low models first', () => {
      const p = new ClassedPolicy(name);
      p.admit('a', 10 * MiB, 1000, 0, low);
      p.admit('b', 10 * MiB, 1000, 1, low);
      p.admit('c', 10 * MiB, 1000, 2, high);
      for (let t = 3; t < 10; t++) p.touch('a', t);
      assert.deepEqual([...p.victims(10)], ['b', 'a', 'c']);
    });

    it('never offers a pinned model, ranks nothing for it, and forgets the pin when it is removed', () => {
      const p = new ClassedPolicy(name);
      p.admit('keep', 10 * MiB, 1000, 0, pinned);
      p.admit('n', 10 * MiB, 1000, 1);
      p.touch('keep', 2);
      p.resize('keep', 20 * MiB);
      assert.deepEqual([...p.victims(3)], ['n']);
      assert.deepEqual([...p.pinned], ['keep']);
      assert.equal(p.size, 1);
      p.remove('keep');
      assert.deepEqual([...p.pinned], []);
    });

    it('a model admitted again takes its new standing: unpinned, it is offered; moved up, it goes after the rest', () => {
      const p = new ClassedPolicy(name);
      p.admit('a', 10 * MiB, 1000, 0, pinned);
      p.admit('b', 10 * MiB, 1000, 1, normal);
      p.admit('a', 10 * MiB, 1000, 2, low);
      assert.deepEqual([...p.victims(3)], ['a', 'b']);
      p.admit('a', 10 * MiB, 1000, 3, high);
      assert.deepEqual([...p.victims(4)], ['b', 'a']);
      assert.equal(p.size, 2);
    });
  });
}
