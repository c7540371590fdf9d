import assert from 'node:assert/strict';
import { KeyedLock } from '../../src/util/keyed-lock';

describe('KeyedLock', () => {
  it('KeyedLock serves waiters in order, per key, and tryAcquire never jumps the queue', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const first = await lock.acquire('a');
    const waiting = [1, 2].map((n) =>
      lock.acquire('a').then((release) => {
        order.push(`a${n}`);
        release();
      }),
    );
    const other = lock.tryAcquire('b');
    assert.ok(other, 'another key is free');
    assert.equal(lock.tryAcquire('a'), null);
    first();
    // Handed straight to the next waiter: still held, so tryAcquire cannot slip in between.
    assert.equal(lock.tryAcquire('a'), null);
    await Promise.all(waiting);
    assert.deepEqual(order, ['a1', 'a2']);
    const free = (key: string) => {
      const release = lock.tryAcquire(key);
      release?.();
      return release !== null;
    };
    assert.equal(free('a'), true, 'a is free once its last waiter released it');
    other();
    assert.equal(free('b'), true);
  });
});
