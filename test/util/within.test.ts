import assert from 'node:assert/strict';
import { within } from '../../src/util/within';
import { settle } from '../helpers/settle';
import { VirtualClock } from '../helpers/virtual-clock';

describe('within', () => {
  it("gives the promise's value when it settles first, and clears its timer", async () => {
    const clock = new VirtualClock();
    let resolve!: (v: string) => void;
    const result = within(new Promise<string>((r) => (resolve = r)), 1000, 'late', clock);
    clock.advance(999);
    resolve('value');
    assert.equal(await result, 'value');
    assert.equal(clock.pending, 0, 'no timer left behind');
  });

  it('gives the fallback once the time has passed on its clock, and not a moment before', async () => {
    const clock = new VirtualClock();
    let done: string | null = null;
    void within(new Promise<string>(() => {}), 1000, 'fallback', clock).then((v) => (done = v));
    clock.advance(999);
    await settle();
    assert.equal(done, null);
    clock.advance(1);
    await settle();
    assert.equal(done, 'fallback');
    assert.equal(clock.pending, 0);
  });

  it("passes the promise's rejection on, and clears its timer", async () => {
    const clock = new VirtualClock();
    await assert.rejects(within(Promise.reject(new Error('boom')), 1000, 'fallback', clock), /boom/);
    assert.equal(clock.pending, 0);
  });
});
