/**
 * The server's side of a body ring: regions handed out in order around the ring and reused only
 * once their batch is answered, whatever order batches are answered in.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { InferMessage } from '../../../src/protocol/messages';
import { readRegion } from '../../../src/protocol/ring-region';
import { BodyRing } from '../../../src/server/hosts/body-handoff';
import { tempDir } from '../../../harness/test-server';

const kRing = 8192;
const kMin = 100;

function ringFile(): number {
  const file = path.join(tempDir('mme-ring-'), 'ring');
  const fd = fs.openSync(file, 'w+');
  fs.unlinkSync(file);
  fs.ftruncateSync(fd, kRing);
  return fd;
}

describe('body ring (server side)', () => {
  it('never overwrites a region whose batch is not answered, and a frame names only its own', () => {
    const op = fc.oneof(
      fc.record({ place: fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 4 }) }),
      fc.record({ release: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const fd = ringFile();
        const ring = new BodyRing(fd, kRing, kMin, () => assert.fail('no write should fail'));
        /** Batches placed and not released: the frame sent for each, and the bodies it replaced. */
        const live = new Map<number, { frame: InferMessage; bodies: Buffer[] }>();
        let id = 1;
        try {
          for (const o of ops) {
            if ('release' in o) {
              const ids = [...live.keys()];
              if (ids.length === 0) continue;
              const batchId = ids[o.release % ids.length];
              ring.release(batchId);
              live.delete(batchId);
            } else {
              const batchId = id;
              const bodies = o.place.map((n, i) => Buffer.alloc(n, (batchId * 7 + i) % 251));
              // Some bodies in pieces, as the socket delivered them.
              const requests = bodies.map((b) => ({
                id: id++,
                requestId: '',
                contentType: '',
                accept: '',
                body: b.length > 2 ? [b.subarray(0, 1), b.subarray(1)] : b,
              }));
              const msg: InferMessage = { batchId, requests };
              const frame = ring.place(msg);
              assert.ok(
                msg.requests.every((r) => r.body !== undefined && !r.ring),
                'the kept batch is left as it was',
              );
              if (frame !== msg) live.set(batchId, { frame, bodies });
            }
            const pread = (into: Buffer, position: number) => fs.readSync(fd, into, 0, into.length, position);
            const regions = [...live.values()].flatMap(({ frame }) =>
              frame.requests.filter((r) => r.ring).map((r) => ({ id: r.id, ...r.ring! })),
            );
            for (const { frame, bodies } of live.values()) {
              frame.requests.forEach((r, i) => {
                if (bodies[i].length < kMin) return assert.ok(!r.ring && r.body !== undefined);
                assert.ok(r.ring && r.body === undefined);
                assert.deepEqual(readRegion(pread, kRing, r.id, r.ring.offset, r.ring.length), bodies[i]);
                // Any other live request's region, named for this one: refused.
                for (const other of regions)
                  if (other.id !== r.id)
                    assert.throws(() => readRegion(pread, kRing, r.id, other.offset, other.length), /another body/);
              });
            }
          }
        } finally {
          ring.close();
        }
      }),
      { numRuns: 200 },
    );
  });

  it('sends a batch over the socket when the ring has no room, and a body larger than the ring always', () => {
    const ring = new BodyRing(ringFile(), kRing, kMin, () => undefined);
    const batch = (batchId: number, n: number): InferMessage => ({
      batchId,
      requests: [{ id: batchId, requestId: '', contentType: '', accept: '', body: Buffer.alloc(n) }],
    });
    assert.ok(ring.place(batch(1, 5000)).requests[0].ring);
    const full = batch(2, 5000);
    assert.equal(ring.place(full), full, 'no room until batch 1 is answered');
    ring.release(1);
    assert.ok(ring.place(batch(3, 5000)).requests[0].ring);
    const huge = batch(4, kRing);
    assert.equal(ring.place(huge), huge);
    ring.close();
  });
});
