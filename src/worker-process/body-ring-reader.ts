/**
 * The worker's side of its body ring (server/hosts/body-ring.ts): the read-only shared-memory file
 * the server passed as fd 4 (MME_BODY_RING_FD). A request whose body the server put there carries
 * its region instead (InvokeRequest.ring); it is read with one pread into a buffer of the request's
 * own, checked first (protocol/ring-region.ts): nothing a frame says can make it read bytes that
 * are not that request's.
 */
import fs from 'node:fs';
import type { InvokeRequest } from '../protocol/messages';
import { readRegion } from '../protocol/ring-region';

export class BodyRingReader {
  private constructor(
    private readonly fd: number,
    private readonly bytes: number,
  ) {}

  /** The ring the server gave this process, if it gave one. */
  static fromEnv(env: NodeJS.ProcessEnv): BodyRingReader | null {
    const fd = Number(env.MME_BODY_RING_FD);
    if (!Number.isInteger(fd) || fd < 0) return null;
    return new BodyRingReader(fd, fs.fstatSync(fd).size);
  }

  /** Puts `r`'s body in place from the ring, if it is there; throws (an MmeError) when its region is not its own. */
  fetch(r: InvokeRequest): void {
    if (!r.ring) return;
    const { offset, length } = r.ring;
    r.ring = undefined;
    r.body = readRegion(
      (into, position) => fs.readSync(this.fd, into, 0, into.length, position),
      this.bytes,
      r.id,
      offset,
      length,
    );
  }
}
