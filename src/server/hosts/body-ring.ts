/**
 * One worker process's body ring, the server's side: a shared-memory file (opened by
 * body-handoff.ts, already unlinked, and passed to the worker as fd 4) that large request bodies
 * are written into, one pwritev per batch, instead of queueing behind each other in the worker's
 * socket. The Infer frame carries only where each body is (protocol/ring-region.ts); the worker
 * reads it with one pread. Without it a 600 KB body crossed a ~200 KB socketpair in several
 * wake-ups of both processes, and the server kept every 64 KiB socket read alive until the
 * socket drained: the external memory that drove its back-to-back mark-compacts.
 *
 * Space is handed out in order, around the ring; a batch's regions are reused only once the batch
 * is answered in full (the worker has read them long before), or with the ring when its process
 * ends. A batch that does not fit, a body larger than the ring, or a write that fails (tmpfs full)
 * travels in its frame as before.
 */
import fs from 'node:fs';
import type { InferMessage, InvokeRequest } from '../../protocol/messages';
import { kRegionAlign, kRegionHeaderBytes, regionBytes, regionHeader } from '../../protocol/ring-region';

/** The part of a ring taken by one batch's bodies: [start, end); released out of order, reused in order. */
interface Held {
  readonly start: number;
  readonly end: number;
  released: boolean;
}

const kZeros = Buffer.alloc(kRegionAlign);

export class BodyRing {
  /** Oldest first: space is reclaimed from the front, once the front batch is released. */
  readonly #held: Held[] = [];
  readonly #byBatch = new Map<number, Held>();
  /** Where the next batch's regions go. */
  #head = 0;
  #closed = false;
  #writeFailed = false;

  /**
   * `onWriteFailed`: a write into the ring failed (its file system is full): told once per ring;
   * the batch goes over the socket.
   */
  constructor(
    readonly fd: number,
    readonly bytes: number,
    readonly minBodyBytes: number,
    private readonly onWriteFailed: (err: Error) => void,
  ) {}

  /**
   * Writes batch `msg`'s large bodies into the ring and returns the frame to send in its place, the
   * bodies replaced by their regions; `msg` itself (what the server keeps) is left as it is. Returns
   * `msg` when no body is large enough or they do not fit.
   */
  place(msg: InferMessage): InferMessage {
    if (this.#closed) return msg;
    let need = 0;
    const lengths = msg.requests.map((r) => {
      const n = bodyLength(r.body);
      if (n >= this.minBodyBytes) need += regionBytes(n);
      return n;
    });
    if (need === 0) return msg;
    const start = this.#room(need);
    if (start < 0) return msg;
    const parts: Buffer[] = [];
    let at = start;
    const requests = msg.requests.map((r, i): InvokeRequest => {
      const length = lengths[i];
      if (length < this.minBodyBytes) return r;
      parts.push(regionHeader(r.id, length), ...pieces(r.body));
      const pad = regionBytes(length) - (length + kRegionHeaderBytes);
      if (pad > 0) parts.push(kZeros.subarray(0, pad));
      const ring = { offset: at, length };
      at += regionBytes(length);
      return { ...r, body: undefined, ring };
    });
    try {
      if (fs.writevSync(this.fd, parts, start) !== need) throw new Error('short write: the file system is full');
    } catch (err) {
      this.#failed(err as Error);
      return msg;
    }
    const held: Held = { start, end: start + need, released: false };
    this.#held.push(held);
    this.#byBatch.set(msg.batchId, held);
    this.#head = held.end;
    return { ...msg, requests };
  }

  /** Batch `batchId` is answered in full: its regions may be reused. */
  release(batchId: number): void {
    const held = this.#byBatch.get(batchId);
    if (!held) return;
    this.#byBatch.delete(batchId);
    held.released = true;
    while (this.#held.length > 0 && this.#held[0].released) this.#held.shift();
    if (this.#held.length === 0) this.#head = 0;
  }

  /** Its process is gone: the file's memory goes back to the system with its last descriptor. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held.length = 0;
    this.#byBatch.clear();
    fs.close(this.fd, () => undefined);
  }

  /** Where `n` bytes fit after the head, or from the ring's start when the end has no room; -1 if nowhere. */
  #room(n: number): number {
    if (this.#held.length === 0) return n <= this.bytes ? 0 : -1;
    const tail = this.#held[0].start;
    // head > tail: the used part is [tail, head), free is [head, end) and [0, tail). The start is
    // taken first when it has room: the ring then touches only as many pages as its bodies in
    // flight need, not all of body_handoff_bytes (tmpfs keeps a page once written).
    if (this.#head > tail) {
      if (n <= tail) return 0;
      return this.#head + n <= this.bytes ? this.#head : -1;
    }
    // Wrapped (head ≤ tail; equal when full): free is [head, tail).
    return this.#head + n <= tail ? this.#head : -1;
  }

  #failed(err: Error): void {
    if (!this.#writeFailed) this.onWriteFailed(err);
    this.#writeFailed = true;
  }
}

function bodyLength(body: InvokeRequest['body']): number {
  if (body === undefined) return 0;
  if (Buffer.isBuffer(body)) return body.length;
  let n = 0;
  for (const b of body) n += b.length;
  return n;
}

function pieces(body: InvokeRequest['body']): readonly Buffer[] {
  if (body === undefined) return [];
  return Buffer.isBuffer(body) ? [body] : body;
}
