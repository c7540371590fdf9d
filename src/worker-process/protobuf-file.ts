/**
 * A bounded walk over protobuf messages in a file: each field's tag, wire type and span, read
 * through one small window, with every length checked against the message that holds it. Nothing
 * is decoded beyond what a caller asks for, so a 2 GB model's weights are stepped over unread.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** A field's bytes, tag and length prefix included: [start, end); a length-delimited field's payload starts at `payload`. */
export interface FieldSpan {
  start: number;
  end: number;
  payload: number;
}

export const enum WireType {
  Varint = 0,
  Fixed64 = 1,
  Bytes = 2,
  Fixed32 = 5,
}

export function span(f: Field): FieldSpan {
  return { start: f.start, end: f.end, payload: f.payload };
}

/** Runs `read` on `path` opened as a FileWindow, and closes it. */
export function withFile<T>(path: string, read: (file: FileWindow) => T): T {
  const file = new FileWindow(path);
  try {
    return read(file);
  } finally {
    file.close();
  }
}

export interface Field extends FieldSpan {
  field: number;
  wire: number;
  varint: number;
}

export function* fields(file: FileWindow, from: number, to: number): Generator<Field> {
  let pos = from;
  while (pos < to) {
    const start = pos;
    const [tag, afterTag] = file.varint(pos);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    let varint = 0;
    let payload = afterTag;
    switch (wire) {
      case WireType.Varint:
        [varint, pos] = file.varint(afterTag);
        break;
      case WireType.Fixed64:
        pos = afterTag + 8;
        break;
      case WireType.Fixed32:
        pos = afterTag + 4;
        break;
      case WireType.Bytes: {
        const [length, afterLength] = file.varint(afterTag);
        payload = afterLength;
        pos = afterLength + length;
        break;
      }
      default:
        throw new Error(`not an ONNX model: unexpected protobuf wire type ${wire} at byte ${start}`);
    }
    if (field === 0 || pos > to)
      throw new Error(`not an ONNX model: a protobuf field at byte ${start} runs past its message`);
    yield { field, wire, start, end: pos, payload, varint };
  }
}

/** The last length-delimited field `n` of a message, as protobuf merges a repeated singular message: the last one wins. */
export function lastField(file: FileWindow, message: FieldSpan, n: number): Field | null {
  let found: Field | null = null;
  for (const f of fields(file, message.payload, message.end)) if (f.field === n && f.wire === WireType.Bytes) found = f;
  return found;
}

/** The last varint field `n` of a message; 0 when absent, as protobuf's default. */
export function lastVarint(file: FileWindow, message: FieldSpan, n: number): number {
  let value = 0;
  for (const f of fields(file, message.payload, message.end))
    if (f.field === n && f.wire === WireType.Varint) value = f.varint;
  return value;
}

const kWindowBytes = 1 << 16;

/** Positional reads through a small window, so walking many small fields costs few syscalls. */
export class FileWindow {
  readonly size: number;
  readonly #fd: number;
  #window = Buffer.alloc(kWindowBytes);
  #windowStart = 0;
  #windowEnd = 0;

  constructor(path: string) {
    this.#fd = openSync(path, 'r');
    this.size = fstatSync(this.#fd).size;
  }

  close(): void {
    closeSync(this.#fd);
  }

  /**
   * A varint at `pos` and the offset after it. Values past 2^53 lose precision; sizes and versions
   * never get there.
   */
  varint(pos: number): [number, number] {
    const bytes = this.#slice(pos, Math.min(10, this.size - pos));
    let value = 0;
    for (let i = 0; i < bytes.length; i++) {
      value += (bytes[i] & 0x7f) * 2 ** (7 * i);
      if (bytes[i] < 0x80) return [value, pos + i + 1];
    }
    throw new Error(`not an ONNX model: bad protobuf varint at byte ${pos}`);
  }

  /** A field's payload as its own buffer (decoders may keep references into it). */
  bytes(f: FieldSpan): Buffer {
    return Buffer.from(this.#slice(f.payload, f.end - f.payload));
  }

  text(f: FieldSpan): string {
    return this.#slice(f.payload, f.end - f.payload).toString('utf8');
  }

  #slice(pos: number, length: number): Buffer {
    if (pos >= this.#windowStart && pos + length <= this.#windowEnd) {
      return this.#window.subarray(pos - this.#windowStart, pos - this.#windowStart + length);
    }
    if (length > kWindowBytes) {
      const big = Buffer.alloc(length);
      if (readSync(this.#fd, big, 0, length, pos) < length)
        throw new Error(`not an ONNX model: the file ends inside a protobuf field at byte ${pos}`);
      return big;
    }
    const n = readSync(this.#fd, this.#window, 0, kWindowBytes, pos);
    this.#windowStart = pos;
    this.#windowEnd = pos + n;
    if (n < length) throw new Error(`not an ONNX model: the file ends inside a protobuf field at byte ${pos}`);
    return this.#window.subarray(0, length);
  }
}
