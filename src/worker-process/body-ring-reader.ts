/**
 * The worker's side of its body ring (server/hosts/body-handoff.ts), the shared-memory file passed as
 * fd 4: a body is read with one pread into a buffer of its own, its region checked first
 * (protocol/ring-region.ts), so nothing a frame says can make it read another request's bytes.
 */
import fs from 'node:fs';
import type { InvokeRequest } from '../protocol/messages';
import { readRegion } from '../protocol/ring-region';

/** Buffers kept for reuse: a worker runs a few batches at a time. */
const kSpares = 8;
/** Buffers are sized in these steps, so bodies of nearly the same size share them. */
const kStep = 64 * 1024;

export class BodyRingReader {
  /**
   * Body buffers given back once their request was answered (recycle()). A pread into fresh memory
   * costs ~10× one into memory already mapped (255 against 27 µs for 600 KB: the kernel faults
   * every page in as it copies), more than the whole ring saves.
   */
  readonly #spares: Buffer[] = [];

  private constructor(
    private readonly fd: number,
    private readonly bytes: number,
  ) {}

  static fromEnv(env: NodeJS.ProcessEnv): BodyRingReader | null {
    const fd = Number(env.MME_BODY_RING_FD);
    if (!Number.isInteger(fd) || fd < 0) return null;
    return new BodyRingReader(fd, fs.fstatSync(fd).size);
  }

  /** Puts `r`'s body in place from the ring, if it is there: true if it did. */
  fetch(r: InvokeRequest): boolean {
    if (!r.ring) return false;
    const { offset, length } = r.ring;
    r.ring = undefined;
    r.body = readRegion(
      (into, position) => fs.readSync(this.fd, into, 0, into.length, position),
      this.bytes,
      r.id,
      offset,
      length,
      (n) => this.#take(n),
    );
    return true;
  }

  /** `body` (a fetch()'s) is no longer referenced by anything: its memory may take the next body. */
  recycle(body: Buffer): void {
    if (this.#spares.length < kSpares) this.#spares.push(Buffer.from(body.buffer));
  }

  #take(n: number): Buffer {
    const i = this.#spares.findIndex((b) => b.length >= n && b.length < n + kStep);
    const buf = i >= 0 ? this.#spares.splice(i, 1)[0] : Buffer.allocUnsafeSlow(Math.ceil(n / kStep) * kStep);
    return buf.subarray(0, n);
  }
}
