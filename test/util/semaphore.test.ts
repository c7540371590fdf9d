import assert from 'node:assert/strict';
import { Semaphore } from '../../src/util/semaphore';
import { settle } from '../helpers/settle';

describe('Semaphore', () => {
  it('grants its permits at once, then serves waiters in arrival order as permits come back', async () => {
    const semaphore = new Semaphore(2);
    const first = await semaphore.acquire();
    const second = await semaphore.acquire();
    const granted: number[] = [];
    const waiters = [1, 2, 3].map((n) =>
      semaphore.acquire().then((release) => {
        granted.push(n);
        return release;
      }),
    );
    await settle();
    assert.deepEqual(granted, [], 'no permit is free while both are held');
    first();
    first(); // a second call of the same release gives nothing back
    await settle();
    assert.deepEqual(granted, [1]);
    second();
    await settle();
    assert.deepEqual(granted, [1, 2]);
    (await waiters[0])();
    await settle();
    assert.deepEqual(granted, [1, 2, 3]);
    (await waiters[1])();
    (await waiters[2])();
    // Both permits are free again: two more acquire at once, a third waits.
    await semaphore.acquire();
    await semaphore.acquire();
    let third = false;
    void semaphore.acquire().then(() => (third = true));
    await settle();
    assert.equal(third, false);
  });

  it('an aborted wait leaves the line with the signal reason, and the permit goes to the next waiter', async () => {
    const semaphore = new Semaphore(1);
    const held = await semaphore.acquire();
    const abort = new AbortController();
    const leaving = semaphore.acquire(abort.signal);
    let nextGranted = false;
    const next = semaphore.acquire().then((release) => {
      nextGranted = true;
      return release;
    });
    const reason = new Error('caller gave up');
    abort.abort(reason);
    await assert.rejects(leaving, (err) => err === reason);
    held();
    await settle();
    assert.equal(nextGranted, true, 'the aborted waiter did not take the permit');
    (await next)();
    await assert.rejects(semaphore.acquire(AbortSignal.abort(new Error('already'))), /already/);
    // The refused acquire took nothing: the one permit is still free.
    const again = await semaphore.acquire();
    again();
  });
});
