/** The indexed heap (util/indexed-heap.ts) against a sorted array, on random operations. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { IndexedHeap } from '../../src/util/indexed-heap';

describe('indexed heap', () => {
  it('property: its order is the map sorted by value then key, through any mix of set, delete, pop, prune and reorder', () => {
    const key = fc.integer({ min: 0, max: 30 });
    const op = fc.oneof(
      fc.record({ set: key, value: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ del: key }),
      fc.record({ reorder: fc.integer({ min: -5, max: 5 }) }),
      fc.record({ first: fc.nat(10) }),
      fc.constant('pop' as const),
      fc.constant('prune' as const),
    );
    // Ties by key, so the order is one answer.
    const before = (a: [number, number], b: [number, number]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const heap = new IndexedHeap<number, [number, number]>(before);
        const model = new Map<number, number>();
        const sorted = () => [...model].sort((a, b) => a[1] - b[1] || a[0] - b[0]).map(([k]) => k);
        for (const o of ops) {
          if (o === 'pop') {
            const first = sorted()[0];
            model.delete(first);
            assert.equal(heap.pop(), first);
          } else if (o === 'prune') {
            heap.prune((k) => k % 3 === 0);
            for (const k of model.keys()) if (k % 3 === 0) model.delete(k);
          } else if ('set' in o) {
            heap.set(o.set, [o.value, o.set]);
            model.set(o.set, o.value);
          } else if ('del' in o) {
            assert.equal(heap.delete(o.del), model.delete(o.del));
          } else if ('reorder' in o) {
            // A change of every value at once, e.g. a new cost fit: some flip sign.
            const f = (k: number, v: number) => (k % 2 === 0 ? v * o.reorder : v + o.reorder);
            heap.reorder((k, [v]) => [f(k, v), k]);
            for (const [k, v] of model) model.set(k, f(k, v));
          } else {
            const first: number[] = [];
            for (const k of heap.ordered()) {
              if (first.length === o.first) break;
              first.push(k);
            }
            assert.deepEqual(first, sorted().slice(0, o.first));
          }
          assert.equal(heap.size, model.size);
          assert.equal(heap.peek(), sorted()[0]);
          for (const [k, v] of model) assert.equal(heap.get(k)?.[0], v);
        }
        assert.deepEqual([...heap.ordered()], sorted());
        assert.deepEqual(heap.clear().sort(), [...model.keys()].sort());
        assert.equal(heap.size, 0);
      }),
    );
  });
});
