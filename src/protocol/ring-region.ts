/**
 * A request body's region in a worker's body ring (a shared-memory file the server writes and the
 * worker reads; server/hosts/body-handoff.ts, worker-process/body-ring-reader.ts): a header naming the
 * request, then the body. An Infer frame announces the region (InvokeRequest.ring) and the worker
 * trusts none of it: the region must lie inside the ring, and its header must name the same request
 * and length, or the request fails. A frame pointing at another request's region, or at a region
 * since reused, can never hand a model that request's bytes.
 *
 *   u32 BE  request id, high word   (as frame ids: binary.ts)
 *   u32 BE  request id, low word
 *   u32 BE  body length
 *   u32 BE  kMagic
 *   ...     body
 */
import { MmeError } from '../errors';

export const kRegionHeaderBytes = 16;
/** Regions start on this boundary: the body (after the 16-byte header) keeps the 8-byte alignment typed data needs. */
export const kRegionAlign = 64;
const kMagic = 0x6d6d6562; // "mmeb"
const kWord = 2 ** 32;

/** The header of request `id`'s region, for a body of `length` bytes. */
export function regionHeader(id: number, length: number): Buffer {
  const h = Buffer.allocUnsafe(kRegionHeaderBytes);
  h.writeUInt32BE(Math.floor(id / kWord), 0);
  h.writeUInt32BE(id >>> 0, 4);
  h.writeUInt32BE(length, 8);
  h.writeUInt32BE(kMagic, 12);
  return h;
}

/** The bytes a region holding a `length`-byte body takes in the ring, to the next region's boundary. */
export function regionBytes(length: number): number {
  return Math.ceil((kRegionHeaderBytes + length) / kRegionAlign) * kRegionAlign;
}

/**
 * Reads request `id`'s body from the ring: one pread of header and body into a buffer of its own
 * (`alloc`'s, default a fresh one), after checking the announced region against the ring's size
 * and the header against the request.
 */
export function readRegion(
  pread: (into: Buffer, position: number) => number,
  ringBytes: number,
  id: number,
  offset: number,
  length: number,
  alloc: (bytes: number) => Buffer = (n) => Buffer.allocUnsafeSlow(n),
): Buffer {
  const refuse = (why: string) =>
    new MmeError('MME_ERR_INTERNAL', `request ${id}'s body could not be read from the body ring: ${why}`);
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0)
    throw refuse(`bad region ${offset}+${length}`);
  if (offset % kRegionAlign !== 0 || offset + kRegionHeaderBytes + length > ringBytes)
    throw refuse(`region ${offset}+${length} is not inside the ring of ${ringBytes} bytes`);
  const buf = alloc(kRegionHeaderBytes + length);
  if (pread(buf, offset) !== buf.length) throw refuse('the ring is shorter than the region');
  const held = buf.readUInt32BE(0) * kWord + buf.readUInt32BE(4);
  if (buf.readUInt32BE(12) !== kMagic || held !== id || buf.readUInt32BE(8) !== length)
    throw refuse(`the region at ${offset} holds another body`);
  return buf.subarray(kRegionHeaderBytes);
}
