/**
 * The field codec of frame headers: fixed-width integers, length-prefixed UTF-8 strings and header
 * maps, and body lengths whose bytes follow in the frame's payload. Hand-rolled because the
 * per-request messages are small and hot: no JSON, no replacer, no schema walk.
 */

const kWord = 0x1_0000_0000;
/** The high word of 2^53 − 1. */
const kMaxHighWord = 0x1f_ffff;

/**
 * Bodies start on this boundary of their frame (the header and each body are padded to it), so a
 * body's typed data (a .npy image's float32s, at a 64-byte offset of its body) can be viewed in place.
 */
export const BODY_ALIGN = 8;
const kPadding = Buffer.alloc(BODY_ALIGN);

function padding(n: number): number {
  return -n & (BODY_ALIGN - 1);
}

/** A shared scratch buffer: a header is built here, then copied out once (headers are small). */
let scratch = Buffer.allocUnsafe(64 * 1024);

export class BinaryWriter {
  #buf = scratch;
  #pos = 0;

  #room(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + n));
    this.#buf.copy(bigger, 0, 0, this.#pos);
    this.#buf = bigger;
    scratch = bigger;
  }

  skip(n: number): void {
    this.#room(n);
    this.#pos += n;
  }

  u8(v: number): void {
    this.#room(1);
    this.#buf[this.#pos++] = v;
  }

  u16(v: number): void {
    this.#room(2);
    this.#pos = this.#buf.writeUInt16BE(v, this.#pos);
  }

  u32(v: number): void {
    this.#room(4);
    this.#pos = this.#buf.writeUInt32BE(v, this.#pos);
  }

  f64(v: number): void {
    this.#room(8);
    this.#pos = this.#buf.writeDoubleBE(v, this.#pos);
  }

  /** 8 bytes, high word first (protocol/ids.ts). */
  id(v: number): void {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new RangeError(`an id must be an integer from 0 to 2^53 − 1, not ${v}`);
    this.#room(8);
    this.#buf.writeUInt32BE(Math.floor(v / kWord), this.#pos);
    this.#pos = this.#buf.writeUInt32BE(v >>> 0, this.#pos + 4);
  }

  str(v: string): void {
    const n = Buffer.byteLength(v);
    this.u32(n);
    this.#room(n);
    this.#pos += this.#buf.write(v, this.#pos, n, 'utf8');
  }

  align(): void {
    const n = padding(this.#pos);
    this.#room(n);
    this.#pos += kPadding.copy(this.#buf, this.#pos, 0, n);
  }

  raw(v: Buffer): void {
    this.#room(v.length);
    this.#pos += v.copy(this.#buf, this.#pos);
  }

  /** Header lists (Node keeps repeated headers as arrays) travel joined, as HTTP allows. */
  headers(h: Readonly<Record<string, string | string[] | undefined>>): void {
    const at = this.#pos;
    this.u32(0);
    let n = 0;
    for (const k in h) {
      const v = h[k];
      if (v === undefined) continue;
      this.str(k);
      this.str(typeof v === 'string' ? v : v.join(', '));
      n++;
    }
    this.#buf.writeUInt32BE(n, at);
  }

  /** The body's length here; the body itself (or its pieces) and its padding go to `bodies`, written after the header. */
  body(b: Buffer | readonly Buffer[] | undefined, bodies: Buffer[]): void {
    let n = 0;
    if (b === undefined || Buffer.isBuffer(b)) {
      n = b ? b.length : 0;
      if (n > 0) bodies.push(b!);
    } else {
      for (const piece of b) {
        n += piece.length;
        if (piece.length > 0) bodies.push(piece);
      }
    }
    this.u32(n);
    if (padding(n) > 0) bodies.push(kPadding.subarray(0, padding(n)));
  }

  finish(): Buffer {
    return Buffer.from(this.#buf.subarray(0, this.#pos));
  }
}

export class BinaryReader {
  #pos: number;
  /** Where the next body starts: bodies follow the header in the order their lengths appear. */
  #bodyAt: number;

  constructor(
    private readonly buf: Buffer,
    start: number,
    private readonly end: number,
  ) {
    this.#pos = start;
    this.#bodyAt = end;
  }

  /** Where the next `n` bytes start, once checked to be in the header; the position moves past them. */
  #take(n: number): number {
    const at = this.#pos;
    if (at + n > this.end)
      throw new RangeError(`frame header truncated: need ${n} bytes at ${at}, header ends at ${this.end}`);
    this.#pos = at + n;
    return at;
  }

  u8(): number {
    return this.buf[this.#take(1)];
  }

  u16(): number {
    return this.buf.readUInt16BE(this.#take(2));
  }

  u32(): number {
    return this.buf.readUInt32BE(this.#take(4));
  }

  f64(): number {
    return this.buf.readDoubleBE(this.#take(8));
  }

  id(): number {
    const at = this.#take(8);
    const high = this.buf.readUInt32BE(at);
    if (high > kMaxHighWord) throw new RangeError(`frame header holds an id past 2^53 − 1 at ${at}`);
    return high * kWord + this.buf.readUInt32BE(at + 4);
  }

  str(): string {
    const n = this.u32();
    const at = this.#take(n);
    return this.buf.toString('utf8', at, at + n);
  }

  headers(): Record<string, string> {
    const n = this.u32();
    const out: Record<string, string> = {};
    for (let i = 0; i < n; i++) {
      const k = this.str();
      const v = this.str();
      // A header named __proto__ is a key like any other, never the object's prototype.
      if (k === '__proto__')
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      else out[k] = v;
    }
    return out;
  }

  /** A slice of the frame, not a copy: the frame buffer belongs to this message alone. */
  body(): Buffer {
    const n = this.u32();
    if (this.#bodyAt + n > this.buf.length)
      throw new RangeError(
        `frame payload truncated: a body of ${n} bytes at ${this.#bodyAt}, frame ends at ${this.buf.length}`,
      );
    const b = this.buf.subarray(this.#bodyAt, this.#bodyAt + n);
    this.#bodyAt += n + padding(n);
    return b;
  }
}
