/**
 * BatchesInFlight (src/server/hosts/batches-in-flight.ts), the one record of the batches a worker
 * process holds: per slot counts that decide a slot's idleness, requests answered one at a time,
 * and at the process's exit which batches were running and which only waiting in the pipe.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BatchesInFlight } from '../../../src/server/hosts/batches-in-flight';
import type { InferMessage } from '../../../src/protocol/messages';
import type { Job } from '../../../src/server/jobs/job';

interface Slot {
  name: string;
  concurrentBatches: boolean;
}

const slot = (name: string, concurrentBatches = false): Slot => ({ name, concurrentBatches });
/** A batch of `ids` (the jobs' request ids) as the process was sent it. */
const batch = (batchId: number, ids: number[]): [InferMessage, Job[]] => [
  { batchId, requests: [] },
  ids.map((id) => ({ id }) as unknown as Job),
];

describe('server/hosts/batches-in-flight: the batches a process holds', () => {
  it('counts batches and unanswered requests per slot, and forgets a batch once all its requests are answered', () => {
    const b = new BatchesInFlight<Slot>();
    const a = slot('a');
    const c = slot('c');
    b.add(a, ...batch(1, [10, 11, 12]));
    b.add(a, ...batch(2, [13]));
    b.add(c, ...batch(3, [20, 21]));
    assert.deepEqual([b.size, b.of(a), b.of(c), b.requestsOf(a), b.requestsOf(c)], [3, 2, 1, 4, 2]);
    // An independent batch is answered a request at a time: held until the last.
    assert.equal(b.answer(1, 1)?.left, 2);
    assert.deepEqual([b.size, b.of(a), b.requestsOf(a)], [3, 2, 3]);
    assert.equal(b.answer(1, 2)?.left, 0);
    assert.deepEqual([b.size, b.of(a), b.requestsOf(a)], [2, 1, 1]);
    assert.equal(b.answer(1, 1), undefined, 'a batch already answered is not held');
    assert.equal(b.answer(99, 1), undefined, 'nor one never sent');
    assert.equal(b.answer(2, 1)?.slot, a);
    assert.deepEqual([b.of(a), b.requestsOf(a), b.of(slot('a'))], [0, 0, 0]);
    assert.equal(b.of(c), 1, "another slot's batches are its own");
  });

  it("finds a request's job among its own slot's held batches only", () => {
    const b = new BatchesInFlight<Slot>();
    const a = slot('a');
    const c = slot('c');
    b.add(a, ...batch(1, [10, 11]));
    b.add(c, ...batch(2, [12]));
    assert.equal((b.jobOf(a, 11) as unknown as { id: number }).id, 11);
    assert.equal(b.jobOf(c, 11), undefined);
    assert.equal(b.jobOf(a, 12), undefined);
    b.answer(1, 2);
    assert.equal(b.jobOf(a, 11), undefined, 'answered in full: no longer held');
  });

  it("at the process's exit gives every batch, each slot's oldest as running and the rest as waiting; a slot running batches side by side has all running", () => {
    const b = new BatchesInFlight<Slot>();
    const a = slot('a');
    const c = slot('c');
    const pre = slot('preloaded', true);
    b.add(a, ...batch(1, [1]));
    b.add(c, ...batch(2, [2]));
    b.add(a, ...batch(3, [3]));
    b.add(pre, ...batch(4, [4]));
    b.add(pre, ...batch(5, [5]));
    b.add(c, ...batch(6, [6]));
    b.answer(2, 1);
    assert.deepEqual(
      b.takeAll().map((l) => [l.batch.msg.batchId, l.slot.name, l.running]),
      [
        [1, 'a', true],
        [3, 'a', false],
        [4, 'preloaded', true],
        [5, 'preloaded', true],
        [6, 'c', true],
      ],
    );
    assert.deepEqual([b.size, b.of(a), b.of(pre), b.requestsOf(c)], [0, 0, 0, 0]);
    assert.deepEqual(b.takeAll(), []);
  });

  it('keeps its counts equal to a plain list of what was sent and not yet answered, over any sequence', () => {
    const slots = [slot('a'), slot('b'), slot('p', true)];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), slot: fc.nat(2), requests: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(20), answered: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('exit' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 60 }), (ops) => {
        const b = new BatchesInFlight<Slot>();
        let model: Array<{ id: number; slot: Slot; left: number }> = [];
        let next = 1;
        for (const o of ops) {
          if (o.kind === 'add') {
            const s = slots[o.slot];
            const ids = Array.from({ length: o.requests }, (_, i) => next * 10 + i);
            b.add(s, ...batch(next, ids));
            model.push({ id: next++, slot: s, left: o.requests });
          } else if (o.kind === 'answer' && model.length > 0) {
            const m = model[o.pick % model.length];
            assert.equal(b.answer(m.id, o.answered)?.batch.msg.batchId, m.id);
            m.left -= o.answered;
            model = model.filter((x) => x.left > 0);
          } else if (o.kind === 'exit') {
            const running = new Set<Slot>();
            const expected = model.map((m) => {
              const r = m.slot.concurrentBatches || !running.has(m.slot);
              running.add(m.slot);
              return [m.id, r];
            });
            assert.deepEqual(
              b.takeAll().map((l) => [l.batch.msg.batchId, l.running]),
              expected,
            );
            model = [];
          }
          assert.equal(b.size, model.length);
          for (const s of slots) {
            const mine = model.filter((m) => m.slot === s);
            assert.equal(b.of(s), mine.length);
            assert.equal(
              b.requestsOf(s),
              mine.reduce((n, m) => n + m.left, 0),
            );
          }
        }
      }),
    );
  });
});
