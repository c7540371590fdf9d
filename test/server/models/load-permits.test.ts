/**
 * loadPermits (src/server/models/lifecycle-operations.ts), max_concurrent_loads: repository loads hold at
 * most every permit but one, so a local load always finds one; with a single permit both kinds
 * share it. No time involved: each acquire is looked at after the microtasks have run.
 */
import assert from 'node:assert/strict';
import { loadPermits } from '../../../src/server/models/lifecycle-operations';
import { settle } from '../../helpers/settle';

/** Starts an acquire and reports whether it has been granted yet. */
function ask(p: ReturnType<typeof loadPermits>, fromRepository: boolean, signal = new AbortController().signal) {
  const state: { release: (() => void) | null; error: unknown } = { release: null, error: null };
  p(fromRepository, signal).then(
    (release) => (state.release = release),
    (err: unknown) => (state.error = err),
  );
  return state;
}

describe('server/models/lifecycle-operations loadPermits: max_concurrent_loads shared with the repository', () => {
  it('leaves one of three permits to local loads however many repository loads wait', async () => {
    const p = loadPermits(3);
    const repo = [ask(p, true), ask(p, true), ask(p, true)];
    await settle();
    assert.deepEqual(
      repo.map((r) => r.release !== null),
      [true, true, false],
      'two repository loads at once',
    );
    const local = ask(p, false);
    await settle();
    assert.ok(local.release, 'the third permit went to the local load');
    const localTwo = ask(p, false);
    await settle();
    assert.equal(localTwo.release, null, 'all three in use');
    repo[0].release!();
    await settle();
    // The freed permit: the waiting local load asked the shared semaphore first; the third repository
    // load is still held back by the repository's share of two.
    assert.ok(localTwo.release);
    assert.equal(repo[2].release, null);
    repo[1].release!();
    await settle();
    assert.ok(repo[2].release, 'a repository permit and a shared one free again');
  });

  it('with one permit, local and repository loads take turns on it', async () => {
    const p = loadPermits(1);
    const both = [ask(p, true), ask(p, false)];
    await settle();
    const holding = both.filter((a) => a.release !== null);
    assert.equal(holding.length, 1, 'one at a time');
    holding[0].release!();
    await settle();
    assert.ok(
      both.every((a) => a.release !== null),
      'the other once it is given back',
    );
  });

  it("a repository load whose wait is aborted gives back its share, and the abort's reason is its error", async () => {
    const p = loadPermits(2);
    const busy = ask(p, false);
    const other = ask(p, false);
    await settle();
    assert.ok(busy.release && other.release);
    const cancel = new AbortController();
    const waiting = ask(p, true, cancel.signal);
    await settle();
    cancel.abort(new Error('client left'));
    await settle();
    assert.equal((waiting.error as Error).message, 'client left');
    busy.release();
    const next = ask(p, true);
    await settle();
    assert.ok(next.release, "the aborted wait did not keep the repository's share");
  });
});
