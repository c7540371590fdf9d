import assert from 'node:assert/strict';
import { ClassedPolicy } from '../../../src/server/cache/eviction-classes';
import { belady } from '../../../scripts/cache-sim/belady';
import { simulate } from '../../../scripts/cache-sim/simulate';
import { zipfTrace, type Trace } from '../../../scripts/cache-sim/traces';

/** One request a ms, one letter a model: `models` maps each letter to [size bytes, load µs]. */
function tinyTrace(models: Record<string, [number, number]>, sequence: string): Trace {
  const names = Object.keys(models);
  return {
    name: sequence,
    models: names.map((name) => ({ name, sizeBytes: models[name][0], loadMicros: models[name][1] })),
    requests: [...sequence].map((letter, at) => ({ model: names.indexOf(letter), at })),
  };
}

const lru = () => new ClassedPolicy('lru');
const gdsf = () => new ClassedPolicy('gdsf');
const equal = { A: [1, 1], B: [1, 1], C: [1, 1] } as Record<string, [number, number]>;

describe('cache simulator', () => {
  it('LRU never hits a cycle one model longer than the cache; Belady keeps one of every three', () => {
    const trace = tinyTrace(equal, 'ABCABCABC');
    assert.deepEqual(simulate(trace, lru, { bytes: 2 }), {
      requests: 9,
      hits: 0,
      loads: 9,
      bytesLoaded: 9,
      loadMicros: 9,
    });
    // A B C(evict B, used last) A✓ B(evict A) C✓ A(evict C) B✓ C
    assert.deepEqual(simulate(trace, belady, { bytes: 2 }), {
      requests: 9,
      hits: 3,
      loads: 6,
      bytesLoaded: 6,
      loadMicros: 6,
    });
  });

  it('honours a model count limit as well as bytes', () => {
    const trace = tinyTrace(equal, 'ABCABCABC');
    assert.equal(simulate(trace, lru, { bytes: 1000, models: 2 }).hits, 0);
    assert.equal(simulate(trace, lru, { bytes: 1000, models: 3 }).hits, 6);
  });

  it('GDSF keeps the small model that is slow to load over a big one that loads fast', () => {
    // S: 10 bytes, 1 ms; B: 100 bytes, 0.1 ms; X: 10 bytes, 0.01 ms; 110 bytes hold S + B or B + X.
    const trace = tinyTrace({ S: [10, 1000], B: [100, 100], X: [10, 10] }, 'SBXS');
    // LRU: X evicts S, then S evicts B.
    assert.deepEqual(simulate(trace, lru, { bytes: 110 }), {
      requests: 4,
      hits: 0,
      loads: 4,
      bytesLoaded: 130,
      loadMicros: 2110,
    });
    // GDSF: X evicts B (priority 1 against S's 100), and S hits.
    assert.deepEqual(simulate(trace, gdsf, { bytes: 110 }), {
      requests: 4,
      hits: 1,
      loads: 3,
      bytesLoaded: 120,
      loadMicros: 1110,
    });
  });

  it('Belady offers the model used farthest in the future first, never-again ones before all', () => {
    const trace = tinyTrace(equal, 'ABCBA');
    const policy = belady(trace);
    policy.admit('A', 1, 1, 0); // next use 4
    policy.admit('B', 1, 1, 1); // next use 3
    policy.admit('C', 1, 1, 2); // never again
    assert.deepEqual([...policy.victims(2)], ['C', 'A', 'B']);
  });

  it('refuses a model that can never fit', () => {
    assert.throws(() => simulate(tinyTrace({ A: [10, 1] }, 'A'), lru, { bytes: 9 }), /can never fit/);
  });

  it('is deterministic: the same seed gives the same numbers', () => {
    const run = (seed: number) => simulate(zipfTrace({ seed, requests: 2000 }), gdsf, { bytes: 512 * 1024 ** 2 });
    assert.deepEqual(run(7), run(7));
    assert.notDeepEqual(run(7), run(8));
  });
});
