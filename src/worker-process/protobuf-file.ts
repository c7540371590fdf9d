/**
 * The shared wire reader (util/protobuf-wire.ts) over a file through one small window: weights are
 * stepped over unread, and small fields cost few syscalls. Malformed input is an Error naming its byte.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { Wire, WireReader, type FieldSpan, type WireField } from '../util/protobuf-wire';

export function withFile<T>(path: string, read: (file: FileWindow) => T): T {
  const file = new FileWindow(path);
  try {
    return read(file);
  } finally {
    file.close();
  }
}

/** The fields of [from, to), throwing at anything that is not a well-formed protobuf field. */
export function* fields(file: FileWindow, from: number, to: number): Generator<WireField> {
  let at = from;
  for (const f of file.fields(from, to)) {
    if (f.wire === Wire.StartGroup || f.wire === Wire.EndGroup || f.wire > Wire.Fixed32)
      throw new Error(`not an ONNX model: unexpected protobuf wire type ${f.wire} at byte ${f.start}`);
    if (f.field === 0) throw new Error(`not an ONNX model: a protobuf field at byte ${f.start} has number 0`);
    yield f;
    at = f.end;
  }
  if (at < to) throw new Error(`not an ONNX model: a protobuf field at byte ${at} runs past its message`);
}

/** The last length-delimited field `n` of a message, as protobuf merges a repeated singular message: the last one wins. */
export function lastField(file: FileWindow, message: FieldSpan, n: number): WireField | null {
  let found: WireField | null = null;
  for (const f of fields(file, message.payload, message.end)) if (f.field === n && f.wire === Wire.Len) found = f;
  return found;
}

export function lastText(file: FileWindow, message: FieldSpan, n: number): string {
  const f = lastField(file, message, n);
  return f ? file.text(f) : '';
}

/** The last varint field `n` of a message; 0 when absent, as protobuf's default. */
export function lastVarint(file: FileWindow, message: FieldSpan, n: number): number {
  let value = 0;
  for (const f of fields(file, message.payload, message.end))
    if (f.field === n && f.wire === Wire.Varint) value = f.varint;
  return value;
}

const kWindowBytes = 1 << 16;

/** Positional reads through a small window. */
export class FileWindow extends WireReader {
  readonly size: number;
  readonly #fd: number;
  #window = Buffer.alloc(kWindowBytes);
  #windowStart = 0;
  #windowEnd = 0;

  constructor(path: string) {
    super();
    this.#fd = openSync(path, 'r');
    this.size = fstatSync(this.#fd).size;
  }

  close(): void {
    closeSync(this.#fd);
  }

  protected byteAt(pos: number): number {
    if (pos < this.#windowStart || pos >= this.#windowEnd) this.#slice(pos, 1);
    return this.#window[pos - this.#windowStart];
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
