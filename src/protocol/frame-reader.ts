/** Cuts a socket's byte stream back into frames (frame-codec.ts), in both processes. */
import { decodeFrame, FrameTooLargeError } from './frame-codec';
import type { Frame } from './messages';

/** The largest read into the reader's own buffer (readTarget): frames that fit arrive many to a read. */
const kScratchBytes = 64 * 1024;

/**
 * Fed in one of two ways:
 * - push(chunk) (a 'data' listener): a frame whole in a chunk is decoded in place; one cut across
 *   chunks is copied once into a buffer of its own size.
 * - readTarget() / wrote() (net.Socket's `onread`): a large frame lands in its own aligned buffer
 *   with no copy and no buffer per read, the churn that made V8 collect back to back on large bodies.
 * Either way a decoded frame's bodies are slices of memory nothing writes to again.
 */
export class FrameReader {
  /** The frame being filled, and how much of it has arrived. */
  #frame: Buffer | null = null;
  #filled = 0;
  /** A length prefix cut across reads. */
  readonly #prefix = Buffer.alloc(4);
  #prefixFilled = 0;
  #scratch: Buffer | null = null;

  /** Mutable: a spare worker's limit is only known once a model is assigned to it. */
  constructor(
    public maxFrameBytes: number,
    private readonly onFrame: (frame: Frame) => void,
  ) {}

  push(chunk: Buffer): void {
    this.#consume(chunk, false);
  }

  /** Where the next read should land: the rest of the frame being filled, or the reader's reused buffer. */
  readTarget(): Buffer {
    if (this.#frame) return this.#frame.subarray(this.#filled);
    this.#scratch ??= Buffer.allocUnsafeSlow(kScratchBytes);
    return this.#scratch;
  }

  /** `n` bytes were read into `target`, the buffer readTarget() last returned. */
  wrote(n: number, target: Uint8Array): void {
    if (target === this.#scratch) this.#consume(this.#scratch.subarray(0, n), true);
    else this.#fill(target as Buffer, 0, n);
  }

  /** `reused`: `chunk` is overwritten by the next read, so nothing decoded may point into it. */
  #consume(chunk: Buffer, reused: boolean): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#frame) {
        at = this.#fill(chunk, at, chunk.length);
        continue;
      }
      if (this.#prefixFilled === 0 && chunk.length - at >= 4) {
        const total = this.#frameBytes(chunk.readUInt32BE(at));
        if (chunk.length - at >= total) {
          const whole = chunk.subarray(at, at + total);
          this.onFrame(decodeFrame(reused ? Buffer.from(whole) : whole));
          at += total;
          continue;
        }
        this.#begin(total);
        continue;
      }
      const n = Math.min(4 - this.#prefixFilled, chunk.length - at);
      chunk.copy(this.#prefix, this.#prefixFilled, at, at + n);
      this.#prefixFilled += n;
      at += n;
      if (this.#prefixFilled === 4) {
        this.#begin(this.#frameBytes(this.#prefix.readUInt32BE(0)));
        this.#prefix.copy(this.#frame!, 0);
        this.#filled = 4;
        this.#prefixFilled = 0;
      }
    }
  }

  /** The whole frame's size from its length prefix, checked against the limit before any of it is buffered. */
  #frameBytes(length: number): number {
    if (length > this.maxFrameBytes) throw new FrameTooLargeError(length, this.maxFrameBytes);
    return 4 + length;
  }

  #begin(total: number): void {
    // Its own ArrayBuffer: offset 0, so the frame's 8-byte alignment is the memory's.
    this.#frame = Buffer.allocUnsafeSlow(total);
    this.#filled = 0;
  }

  /** Appends `src[from, to)` (or what of it the frame still needs) to the frame being filled; returns where it stopped. */
  #fill(src: Buffer, from: number, to: number): number {
    const frame = this.#frame!;
    const n = Math.min(frame.length - this.#filled, to - from);
    if (src.buffer !== frame.buffer || src.byteOffset !== frame.byteOffset + this.#filled)
      src.copy(frame, this.#filled, from, from + n);
    this.#filled += n;
    if (this.#filled === frame.length) {
      this.#frame = null;
      this.onFrame(decodeFrame(frame));
    }
    return from + n;
  }
}
