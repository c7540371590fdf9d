/** The binary min-heap (util/min-heap.ts) against a sorted array, on random operations. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MinHeap } from '../../src/util/min-heap';

describe('min-heap', () => {
  it('property: pops in sorted order through any mix of push, pop and prune', () => {
    const op = fc.oneof(fc.integer({ min: 0, max: 50 }), fc.constant('pop' as const), fc.constant('prune' as const));
    fc.assert(
      fc.property(fc.array(op), (ops) => {
        const heap = new MinHeap<number>((a, b) => a < b);
        let model: number[] = [];
        for (const o of ops) {
          if (o === 'pop') assert.equal(heap.pop(), model.sort((a, b) => a - b).shift());
          else if (o === 'prune') {
            heap.prune((n) => n % 3 === 0);
            model = model.filter((n) => n % 3 !== 0);
          } else {
            heap.push(o);
            model.push(o);
          }
          assert.equal(heap.length, model.length);
          assert.equal(heap.peek(), model.length ? Math.min(...model) : undefined);
        }
        assert.deepEqual(
          heap.drainAll().sort((a, b) => a - b),
          model.sort((a, b) => a - b),
        );
      }),
    );
  });
});
