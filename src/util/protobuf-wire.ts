/**
 * The one protobuf wire reader: each field's number, wire type and span, with every length checked
 * against the message that holds it. Nothing is decoded beyond what a caller asks for. Its users:
 * gRPC's ModelInfer codec and message limits (over a request's bytes) and the ONNX file reader
 * (over a file, through a window: worker-process/protobuf-file.ts).
 */

export const enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  StartGroup = 3,
  EndGroup = 4,
  Fixed32 = 5,
}

/** A field's bytes, tag and length prefix included: [start, end); its value (a Len field's payload) starts at `payload`. */
export interface FieldSpan {
  start: number;
  end: number;
  payload: number;
}

export interface WireField extends FieldSpan {
  field: number;
  wire: number;
  /** A varint field's value (0 for other wire types). */
  varint: number;
}

/** A walk over bytes that a subclass reads: a Buffer (BufferReader) or a file. */
export abstract class WireReader {
  /** Where the last varint read ended. */
  varintEnd = 0;

  protected abstract byteAt(pos: number): number;

  /**
   * The varint at `at`, or -1 when it is cut short by `end` or longer than `maxBytes`. Values past
   * 2^53 lose precision: lengths, tags and the sizes callers read never get there.
   */
  varint(at: number, end: number, maxBytes = 10): number {
    let value = 0;
    for (let i = 0, scale = 1; i < maxBytes && at < end; i++, scale *= 0x80) {
      const byte = this.byteAt(at++);
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        this.varintEnd = at;
        return value;
      }
    }
    return -1;
  }

  /**
   * The field at `at` of a message ending at `end`, or null when it is cut short or runs past
   * `end`. A group tag or a wire type protobuf lacks (6, 7) comes back alone (payload = end, just
   * past its tag): what follows cannot be delimited, and the caller refuses or stops there.
   */
  field(at: number, end: number): WireField | null {
    const tag = this.varint(at, end);
    if (tag < 0) return null;
    const wire = tag % 8;
    let payload = this.varintEnd;
    let fieldEnd = payload;
    let varint = 0;
    if (wire === Wire.Varint) {
      varint = this.varint(payload, end);
      if (varint < 0) return null;
      fieldEnd = this.varintEnd;
    } else if (wire === Wire.Fixed64 || wire === Wire.Fixed32) {
      fieldEnd = payload + (wire === Wire.Fixed64 ? 8 : 4);
    } else if (wire === Wire.Len) {
      const length = this.varint(payload, end);
      if (length < 0) return null;
      payload = this.varintEnd;
      fieldEnd = payload + length;
    }
    if (fieldEnd > end) return null;
    return { field: Math.floor(tag / 8), wire, start: at, payload, end: fieldEnd, varint };
  }

  /** The fields of [from, to), ending after a group or unknown wire type, or before anything malformed. */
  *fields(from: number, to: number): Generator<WireField, void, void> {
    for (let at = from; at < to; ) {
      const f = this.field(at, to);
      if (!f) return;
      yield f;
      if (f.wire !== Wire.Varint && f.wire !== Wire.Fixed64 && f.wire !== Wire.Len && f.wire !== Wire.Fixed32) return;
      at = f.end;
    }
  }
}

export class BufferReader extends WireReader {
  constructor(readonly bytes: Buffer) {
    super();
  }

  protected byteAt(pos: number): number {
    return this.bytes[pos];
  }

  text(f: FieldSpan): string {
    return this.bytes.toString('utf8', f.payload, f.end);
  }
}
