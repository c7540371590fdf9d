/** The ordered set (util/ordered-set.ts) against a sorted array, on random operations. */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OrderedSet } from '../../src/util/ordered-set';

describe('ordered set', () => {
  it('property: any page is the sorted array sliced, through any mix of add and delete', () => {
    const key = fc.string({ maxLength: 3 });
    const op = fc.oneof(
      fc.record({ add: key }),
      fc.record({ del: key }),
      fc.record({ start: fc.nat(40), count: fc.nat(40) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const set = new OrderedSet();
        const model = new Set<string>();
        const sorted = () => [...model].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        for (const o of ops) {
          if ('add' in o) assert.equal(set.add(o.add), !model.has(o.add) && !!model.add(o.add));
          else if ('del' in o) assert.equal(set.delete(o.del), model.delete(o.del));
          else assert.deepEqual(set.slice(o.start, o.count), sorted().slice(o.start, o.start + o.count));
          assert.equal(set.size, model.size);
        }
        assert.deepEqual(set.values(), sorted());
      }),
    );
  });
});
