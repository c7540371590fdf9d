/**
 * One worker process's body ring, the server's side: a shared-memory file (fd 4 of the worker) that
 * large request bodies are written into, one pwritev per batch; the Infer frame carries only where
 * each is (protocol/ring-region.ts). Through the socket a 600 KB body took several wake-ups of both
 * processes, and the server's 64 KiB socket reads drove back-to-back mark-compacts. A batch's space
 * is reused once it is answered in full; one that does not fit, or whose write fails, goes in its frame.
 */
import fs from 'node:fs';
import type { InferMessage, InvokeRequest } from '../../protocol/messages';
import { kRegionAlign, kRegionHeaderBytes, regionBytes, regionHeader } from '../../protocol/ring-region';

/** One batch's bodies: [start, end); released out of order, reused in order. */
interface Held {
  readonly start: number;
  readonly end: number;
  released: boolean;
}

const kZeros = Buffer.alloc(kRegionAlign);

export class BodyRing {
  /** Oldest first: space is reclaimed from the front. */
  readonly #held: Held[] = [];
  readonly #byBatch = new Map<number, Held>();
  #head = 0;
  #closed = false;
  #writeFailed = false;

  /** `onWriteFailed`: told once per ring (tmpfs full); the batch goes over the socket. */
  constructor(
    readonly fd: number,
    readonly bytes: number,
    readonly minBodyBytes: number,
    private readonly onWriteFailed: (err: Error) => void,
  ) {}

  /** The frame to send for `msg`, its large bodies written into the ring; `msg` is left as it is. */
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

/** Without building pieces: most bodies of a batch stay in the frame, under min_body_bytes. */
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
