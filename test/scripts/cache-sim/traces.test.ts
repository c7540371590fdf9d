import assert from 'node:assert/strict';
import { scanTrace, shiftingTrace, TRACE_SHAPE, zipfTrace, type Trace } from '../../../scripts/cache-sim/traces';

const MiB = 1024 ** 2;
const small = { seed: 3, requests: 20_000 };

/** Request counts per model index. */
function counts(trace: Trace, from = 0, to = trace.requests.length): number[] {
  const n = new Array<number>(trace.models.length).fill(0);
  for (const r of trace.requests.slice(from, to)) n[r.model]++;
  return n;
}

const mostUsed = (n: number[]) => n.indexOf(Math.max(...n));

describe('cache simulator traces', () => {
  it('are a pure function of the seed', () => {
    assert.deepEqual(zipfTrace(small), zipfTrace(small));
    assert.deepEqual(scanTrace(small), scanTrace(small));
    assert.deepEqual(shiftingTrace(small), shiftingTrace(small));
    assert.notDeepEqual(zipfTrace(small), zipfTrace({ ...small, seed: 4 }));
  });

  it('draw sizes of 1-200 MiB and load times of overhead + size × rate, within the spread', () => {
    const { minSizeMiB, maxSizeMiB, loadOverheadMs, loadMsPerMiB, loadSpread } = TRACE_SHAPE;
    for (const m of scanTrace(small).models) {
      assert.ok(m.sizeBytes >= minSizeMiB * MiB && m.sizeBytes <= maxSizeMiB * MiB, `${m.name} size ${m.sizeBytes}`);
      const nominalMicros = (loadOverheadMs + (loadMsPerMiB * m.sizeBytes) / MiB) * 1000;
      assert.ok(Math.abs(m.loadMicros / nominalMicros - 1) <= loadSpread + 1e-6, `${m.name} load ${m.loadMicros} µs`);
    }
  });

  it('give the top Zipf model about 1 / H(300) ≈ 16 % of the requests, one request every 20 ms', () => {
    const trace = zipfTrace(small);
    const share = Math.max(...counts(trace)) / trace.requests.length;
    assert.ok(share > 0.14 && share < 0.18, `top share ${share}`);
    assert.ok(trace.requests.every((r, i) => r.at === i * TRACE_SHAPE.requestIntervalMs));
  });

  it('insert the scan half-way: every cold model once, in one burst', () => {
    const trace = scanTrace({ ...small, scanModels: 50 });
    const burst = trace.requests.slice(10_000, 10_050).map((r) => r.model);
    assert.equal(trace.requests.length, 20_050);
    assert.deepEqual(
      burst,
      Array.from({ length: 50 }, (_, i) => TRACE_SHAPE.models + i),
    );
    assert.ok(
      counts(trace)
        .slice(TRACE_SHAPE.models)
        .every((n) => n === 1),
    );
  });

  it('move the hot set on every shiftEvery requests', () => {
    const trace = shiftingTrace({ ...small, shiftEvery: 10_000 });
    assert.notEqual(mostUsed(counts(trace, 0, 10_000)), mostUsed(counts(trace, 10_000, 20_000)));
  });
});
