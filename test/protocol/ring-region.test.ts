/**
 * A body ring's region as the worker reads it: whatever offset and length a frame announces, the
 * worker gets that request's own body or an error, never another request's bytes.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { kRegionAlign, readRegion, regionBytes, regionHeader } from '../../src/protocol/ring-region';

const kRing = 4096;

/** A ring holding the bodies of requests 1..n back to back, as the server writes them. */
function ringOf(bodies: Buffer[]): { ring: Buffer; at: number[] } {
  const ring = Buffer.alloc(kRing);
  const at: number[] = [];
  let pos = 0;
  bodies.forEach((b, i) => {
    at.push(pos);
    regionHeader(i + 1, b.length).copy(ring, pos);
    b.copy(ring, pos + 16);
    pos += regionBytes(b.length);
  });
  return { ring, at };
}

const pread = (ring: Buffer) => (into: Buffer, position: number) =>
  ring.copy(into, 0, position, position + into.length);

describe('ring region (where a large body waits for its worker)', () => {
  it('hands a request its own body, and refuses any other region a frame names', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 0, maxLength: 300 }), { minLength: 1, maxLength: 6 }),
        fc.nat(7),
        fc.integer({ min: -100, max: kRing + 100 }),
        fc.integer({ min: -10, max: kRing + 100 }),
        (raw, pick, offset, length) => {
          const bodies = raw.map((b) => Buffer.from(b));
          const { ring, at } = ringOf(bodies);
          const id = (pick % bodies.length) + 1;
          const own = bodies[id - 1];
          assert.deepEqual(readRegion(pread(ring), kRing, id, at[id - 1], own.length), own);
          let got: Buffer | null = null;
          try {
            got = readRegion(pread(ring), kRing, id, offset, length);
          } catch (err) {
            assert.match((err as Error).message, /body ring/);
          }
          if (got !== null) assert.deepEqual(got, own, `offset ${offset} length ${length} gave other bytes`);
        },
      ),
    );
  });

  it('refuses a region cut off by the ring end, and one whose header names another length', () => {
    const { ring, at } = ringOf([Buffer.from('abc'), Buffer.from('defg')]);
    assert.throws(() => readRegion(pread(ring), kRing, 1, kRing - kRegionAlign, 100), /not inside the ring/);
    assert.throws(() => readRegion(pread(ring), kRing, 2, at[1], 3), /holds another body/);
    assert.throws(() => readRegion(pread(ring), kRing, 2, at[0], 3), /holds another body/);
  });
});
