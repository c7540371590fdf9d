/**
 * FairTurns and RunClock on a stand-in session that, like onnxruntime-node's, computes
 * synchronously inside a setImmediate callback and holds the thread while it does.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import type { InferenceSession } from 'onnxruntime-node';
import { FairTurns, RunClock } from '../../src/worker-process/run-clock';

/** The time RunClock reads (performance.now(), ms): it moves only while a fake session computes. */
let virtualMs = 0;

/** A session whose run records its feed's name, calls `during` and computes for `ms` (never 0: turns are picked by time). */
function fakeSession(order: string[], ms: number, during: (name: string) => void = () => undefined): InferenceSession {
  return {
    run: (feeds: { name: string }) =>
      new Promise((resolve) =>
        setImmediate(() => {
          order.push(feeds.name);
          during(feeds.name);
          virtualMs += ms;
          resolve({});
        }),
      ),
  } as unknown as InferenceSession;
}

const run = (s: InferenceSession, name: string) =>
  (s.run as unknown as (f: { name: string }) => Promise<unknown>)({ name });

describe('worker run turns (run-clock.ts)', () => {
  const realNow = performance.now.bind(performance);
  beforeEach(() => {
    performance.now = () => virtualMs;
  });
  afterEach(() => {
    performance.now = realNow;
  });

  it("gives the next turn to a model that started waiting during a slow model's run, ahead of the slow model's queued runs", async () => {
    const order: string[] = [];
    const turns = new FairTurns();
    const tiny = fakeSession(order, 1);
    const slowClock = new RunClock();
    const tinyClock = new RunClock();
    tinyClock.watch(tiny, turns);
    let tinyRun: Promise<unknown> | null = null;
    const slow = fakeSession(order, 5, (name) => {
      if (name === 'slow1') tinyRun = run(tiny, 'tiny');
    });
    slowClock.watch(slow, turns);
    await Promise.all([run(slow, 'slow1'), run(slow, 'slow2'), run(slow, 'slow3')]);
    // Set inside the session's callback, which the compiler's flow analysis does not see.
    await (tinyRun as Promise<unknown> | null);
    assert.deepEqual(order, ['slow1', 'tiny', 'slow2', 'slow3']);
    assert.equal(slowClock.micros, 15_000, 'three 5 ms runs timed');
    assert.equal(tinyClock.micros, 1000, 'one 1 ms run timed, not the wait behind slow1');
  });

  it('runs one session at a time, and counts nothing for a run refused before it starts', async () => {
    const order: string[] = [];
    let inside = 0;
    let most = 0;
    const turns = new FairTurns();
    const clocks = [new RunClock(), new RunClock(), new RunClock()];
    const sessions = clocks.map((c, i) => {
      const s = fakeSession(order, 1, () => {
        most = Math.max(most, ++inside);
        setImmediate(() => inside--);
      });
      c.watch(s, turns);
      return { s, i };
    });
    await Promise.all(sessions.flatMap(({ s, i }) => [run(s, `m${i}a`), run(s, `m${i}b`)]));
    assert.equal(order.length, 6);
    assert.equal(most, 1);
    const refused = { run: () => Promise.reject(new Error('bad feeds')) } as unknown as InferenceSession;
    const clock = new RunClock();
    clock.watch(refused, turns);
    await assert.rejects(run(refused, 'x'), /bad feeds/);
    assert.equal(clock.micros, 0);
    await run(sessions[0].s, 'after');
    assert.equal(order.at(-1), 'after', 'a refused run gives its turn back');
  });
});
