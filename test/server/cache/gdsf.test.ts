import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ClassedPolicy, LoadCostFit } from '../../../src/server/cache/eviction-classes';

/** Without decay, priorities are the textbook L + frequency × cost / size and easy to compute by hand. */
const classic = () => new ClassedPolicy('gdsf', Infinity);

describe('GDSF eviction policy', () => {
  it('is what new ClassedPolicy("gdsf") builds', () => {
    assert.equal(new ClassedPolicy('gdsf').name, 'gdsf');
  });

  it('offers the lowest frequency × load time / size first', () => {
    const gdsf = classic();
    gdsf.admit('a', 100, 1000, 0); // 10
    gdsf.admit('b', 10, 500, 1); // 50
    gdsf.admit('c', 1000, 2000, 2); // 2
    assert.deepEqual([...gdsf.victims(3)], ['c', 'a', 'b']);
    for (let t = 4; t < 8; t++) gdsf.touch('c', t); // 5 uses: 10, tied with a, used later
    assert.deepEqual([...gdsf.victims(8)], ['a', 'c', 'b']);
  });

  it('re-ranks a model whose size was re-measured', () => {
    const gdsf = classic();
    gdsf.admit('a', 100, 1000, 0); // 10
    gdsf.admit('b', 50, 1000, 1); // 20
    assert.deepEqual([...gdsf.victims(2)], ['a', 'b']);
    gdsf.resize('b', 200); // 5
    assert.deepEqual([...gdsf.victims(3)], ['b', 'a']);
  });

  it('ages: after an eviction a newcomer outranks an older model with a better ratio', () => {
    const gdsf = classic();
    gdsf.admit('v', 1, 2, 0); // 2
    gdsf.admit('x', 1, 3, 1); // 3
    assert.equal([...gdsf.victims(2)][0], 'v');
    gdsf.remove('v'); // L = 2
    gdsf.admit('y', 1, 2, 3); // 2 + 2 = 4
    assert.deepEqual([...gdsf.victims(4)], ['x', 'y']);
  });

  it('an unload of a hot model lifts L no higher than the lowest model still cached', () => {
    const gdsf = classic();
    gdsf.admit('a', 100, 1000, 0); // 10
    gdsf.admit('b', 10, 500, 1); // 50
    gdsf.admit('c', 1000, 2000, 2); // 2
    gdsf.remove('b'); // L = 2, not 50
    gdsf.admit('d', 1000, 2000, 3); // about 2 + 2 = 4 (50 + 2 had L risen to b's)
    assert.deepEqual([...gdsf.victims(4)], ['c', 'd', 'a']);
  });

  it('ranks models of equal size and use by recency, whatever their one load measured', () => {
    // The issue's trace: m0, m1, m2 loaded, m1 used again, then room is needed; m2's load measured fastest.
    const gdsf = new ClassedPolicy('gdsf');
    gdsf.admit('m0', 2 ** 20, 20_000, 0);
    gdsf.admit('m1', 2 ** 20, 18_000, 100);
    gdsf.admit('m2', 2 ** 20, 9_000, 200);
    gdsf.touch('m1', 300);
    assert.deepEqual([...gdsf.victims(400)], ['m0', 'm2', 'm1']);
  });

  it('fits load cost as a fixed part plus a part per byte over every load', () => {
    const fit = new LoadCostFit();
    for (const [size, micros] of [
      [1e6, 1_200],
      [1e6, 800],
      [3e6, 3_100],
      [3e6, 2_900],
    ])
      fit.add(size, micros);
    assert.ok(Math.abs(fit.estimate(2e6) - 2_000) < 1e-6, `${fit.estimate(2e6)}`);
    assert.ok(Math.abs(fit.estimate(1e6) - 1_000) < 1e-6);
    const one = new LoadCostFit();
    one.add(5e8, 10_000);
    one.add(5e8, 30_000);
    assert.equal(one.estimate(5e8), 20_000, 'one size seen: the mean');
    assert.equal(new LoadCostFit().estimate(10), 1);
  });

  it('decays frequency, so a model hot long ago sinks below a newcomer', () => {
    const decaying = new ClassedPolicy('gdsf', 1000);
    const steady = classic();
    for (const gdsf of [decaying, steady]) {
      gdsf.admit('old', 100, 1000, 0);
      gdsf.touch('old', 0); // 2 uses: 20
      gdsf.admit('new', 100, 1500, 1000); // 15
    }
    assert.deepEqual([...steady.victims(1000)], ['new', 'old']);
    assert.deepEqual([...decaying.victims(1000)], ['old', 'new']); // one half-life later old weighs 1 use: 10
  });

  it('ignores models it does not hold', () => {
    const gdsf = classic();
    gdsf.admit('a', 1, 1, 0);
    gdsf.touch('z', 1);
    gdsf.resize('z', 5);
    gdsf.remove('z');
    assert.deepEqual([...gdsf.victims(2)], ['a']);
  });

  it('property: its heap offers models in the order of their priorities computed afresh, through any mix of operations', () => {
    const halfLife = 1000;
    const name = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
    const op = fc.oneof(
      fc.record({ admit: name, size: fc.constantFrom(1, 10, 100) }),
      fc.record({ touch: name }),
      fc.record({ remove: name }),
      fc.record({ resize: name, size: fc.constantFrom(1, 10, 100) }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(op, fc.integer({ min: 0, max: 3000 })), { maxLength: 80 }), (steps) => {
        // The reference: every priority decays by half each half-life from its model's last use, L
        // with it; the load cost is the same for every load, so the fitted cost is that constant.
        const cost = 1000;
        const gdsf = new ClassedPolicy('gdsf', halfLife);
        const models = new Map<string, { size: number; frequency: number; lastUse: number; base: number }>();
        let aging = { value: 0, at: 0 };
        const decay = (ms: number) => 2 ** (-ms / halfLife);
        const L = (now: number) => aging.value * decay(now - aging.at);
        const priority = (m: { size: number; frequency: number; lastUse: number; base: number }, now: number) =>
          (m.base + (m.frequency * cost) / m.size) * decay(now - m.lastUse);
        let now = 0;
        for (const [o, dt] of steps) {
          now += dt;
          if ('admit' in o) {
            if (models.has(o.admit)) continue; // the manager never admits a model it holds
            gdsf.admit(o.admit, o.size, cost, now);
            models.set(o.admit, { size: o.size, frequency: 1, lastUse: now, base: L(now) });
          } else if ('touch' in o) {
            gdsf.touch(o.touch, now);
            const m = models.get(o.touch);
            if (m)
              Object.assign(m, { frequency: m.frequency * decay(now - m.lastUse) + 1, lastUse: now, base: L(now) });
          } else if ('remove' in o) {
            gdsf.remove(o.remove);
            if (!models.has(o.remove)) continue;
            const lowest = Math.min(...[...models.values()].map((m) => priority(m, now)));
            if (lowest > L(now)) aging = { value: lowest, at: now };
            models.delete(o.remove);
          } else {
            gdsf.resize(o.resize, o.size);
            const m = models.get(o.resize);
            if (m) m.size = o.size;
          }
          const order = [...gdsf.victims(now)];
          assert.deepEqual([...order].sort(), [...models.keys()].sort());
          const priorities = order.map((n) => priority(models.get(n)!, now));
          for (let i = 1; i < priorities.length; i++)
            assert.ok(priorities[i - 1] <= priorities[i] * (1 + 1e-9), `${order.join(',')}: ${priorities.join(', ')}`);
        }
      }),
    );
  });
});
