/**
 * Protobuf written by hand, for what no encoder writes (unpacked shapes, unknown fields, cut-off
 * messages) and for messages too big to build as objects first.
 */
export function varint(n: number): Buffer {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 0x80)) out.push((n % 0x80) | 0x80);
  out.push(n);
  return Buffer.from(out);
}

/** A length-delimited field (wire type 2). */
export const field = (number: number, payload: Buffer): Buffer =>
  Buffer.concat([varint(number * 8 + 2), varint(payload.length), payload]);

/** A string field. */
export const text = (number: number, value: string): Buffer => field(number, Buffer.from(value));
