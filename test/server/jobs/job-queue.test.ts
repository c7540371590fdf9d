/**
 * The job queue (jobs/job-queue.ts) on its own, on numbers for time: FIFO with one level; with
 * several, the best level first, and ageing that bounds how long any job can be passed.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Job } from '../../../src/server/jobs/job';
import { JobQueue } from '../../../src/server/jobs/job-queue';

let nextRequest = 0;
function job(admittedAt: number, priority?: number): Job {
  const request = { id: 0, requestId: `q-${nextRequest++}`, contentType: '', accept: '', body: Buffer.alloc(0) };
  return new Job(request, { priority }, admittedAt, Number.POSITIVE_INFINITY);
}

describe('job queue', () => {
  it('with one level is first in, first out, whatever priority a job names', () => {
    const q = new JobQueue(10);
    const jobs = [job(0, 0), job(1), job(2, 0)];
    for (const j of jobs) q.push(j);
    assert.deepEqual(q.take(10, 100), jobs);
    assert.equal(q.length, 0);
  });

  it('serves the best level first, first in first out within a level; no priority is the middle level', () => {
    const q = new JobQueue(10, 3, 1000);
    const low = job(0, 2);
    const mid = job(1, 1);
    const plain = job(2);
    const high = job(3, 0);
    for (const j of [low, mid, plain, high]) q.push(j);
    assert.equal(q.length, 4);
    assert.deepEqual(q.take(10, 3), [high, mid, plain, low]);
  });

  it('ages: a job that waited priority_aging_ms per level goes before a newer better one', () => {
    const q = new JobQueue(10, 3, 100);
    const low = job(0, 2);
    q.push(low);
    const high = job(200, 0);
    q.push(high);
    // At 200 the low one has risen two levels: a tie with the high one, and it is older.
    assert.deepEqual(q.take(1, 200), [low]);
    assert.deepEqual(q.take(1, 200), [high]);
  });

  it('drops removed, settled and cancelled jobs and keeps its length', () => {
    const q = new JobQueue(10, 2, 100);
    const a = job(0, 0);
    const b = job(0, 1);
    const c = job(0, 1);
    for (const j of [a, b, c]) q.push(j);
    assert.equal(q.remove(b), true);
    assert.equal(q.remove(b), false);
    c.settled = true;
    assert.equal(q.length, 2);
    assert.deepEqual(q.take(10, 0), [a]);
    assert.equal(q.length, 0);
  });

  it('puts jobs back at the head of their own level', () => {
    const q = new JobQueue(10, 2, 1000);
    const queued = job(5, 1);
    q.push(queued);
    const back = [job(0, 0), job(1, 1)];
    q.unshift(back);
    assert.deepEqual(q.take(10, 5), [back[0], back[1], queued]);
  });

  it('property: no job is ever passed by one admitted (its level + 1) × priority_aging_ms after it', () => {
    const op = fc.oneof(
      fc.record({ push: fc.integer({ min: 0, max: 4 }), after: fc.integer({ min: 0, max: 300 }) }),
      fc.record({ take: fc.integer({ min: 1, max: 3 }), after: fc.integer({ min: 0, max: 300 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 200 }),
        fc.array(op),
        (levels, aging, ops) => {
          const q = new JobQueue(1000, levels, aging);
          const waiting = new Set<Job>();
          let now = 0;
          for (const o of ops) {
            now += o.after;
            if ('push' in o) {
              const j = job(now, o.push % levels);
              q.push(j);
              waiting.add(j);
              continue;
            }
            for (const taken of q.take(o.take, now)) {
              waiting.delete(taken);
              for (const older of waiting) {
                const bound = older.admittedAt + ((older.opts.priority ?? 0) + 1) * aging;
                assert.ok(
                  taken.admittedAt < bound || taken.admittedAt < older.admittedAt,
                  `a job of ${taken.admittedAt} passed one of ${older.admittedAt} (level ${older.opts.priority})`,
                );
              }
            }
          }
          assert.equal(q.length, waiting.size);
        },
      ),
    );
  });
});
