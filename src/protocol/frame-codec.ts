/**
 * The bytes of a frame, written and read by both processes. One frame:
 *
 *   u32 BE  length of everything after this field
 *   u8      message kind (MessageKind)
 *   u32 BE  length of the header
 *   ...     header: fixed binary fields for the per-request messages (Infer, Result, Chunk,
 *           ChunkAck, Cancel: see the codecs below), JSON for the rare control messages (Load,
 *           Unload, Started, Loaded, LoadFailed, Unloaded), which carry no bodies
 *   ...     payload: raw bytes (request/response bodies, tensor data) back to back, sliced by the
 *           lengths the header lists; the header's end and each body are padded with zeros to
 *           BODY_ALIGN bytes of the frame, so typed data in a body can be read in place
 * Bodies are never copied: written as themselves after the header (one writev), read back as slices.
 */
import type { Socket } from 'node:net';
import { BinaryReader, BinaryWriter } from './binary';
import { MAX_U32 } from './ids';
import {
  MessageKind,
  type ChunkMessage,
  type Frame,
  type InferMessage,
  type InvokeRequest,
  type ResultMessage,
  type WireResponse,
} from './messages';
import type { ResponseHead } from '../model-types';

const kPrefix = 9; // u32 length + u8 kind + u32 header length

/** A frame as buffers to write back to back: the prefix and header, then each body as it is. */
export function encodeFrame(frame: Frame): Buffer[] {
  const w = new BinaryWriter();
  w.skip(kPrefix);
  const bodies: Buffer[] = [];
  switch (frame.kind) {
    case MessageKind.Infer:
      writeInfer(w, frame.msg, bodies);
      break;
    case MessageKind.Result:
      writeResult(w, frame.msg, bodies);
      break;
    case MessageKind.Chunk:
      writeChunk(w, frame.msg, bodies);
      break;
    case MessageKind.Cancel:
      w.id(frame.msg.id);
      break;
    case MessageKind.ChunkAck:
      w.id(frame.msg.id);
      w.u32(frame.msg.bytes);
      break;
    default:
      w.raw(Buffer.from(JSON.stringify(frame.msg)));
  }
  if (bodies.length > 0) w.align();
  const head = w.finish();
  let payload = 0;
  for (const b of bodies) payload += b.length;
  const length = head.length - 4 + payload;
  if (length > MAX_U32) throw new FrameTooLargeError(length, MAX_U32);
  head.writeUInt32BE(length, 0);
  head.writeUInt8(frame.kind, 4);
  head.writeUInt32BE(head.length - kPrefix, 5);
  return bodies.length === 0 ? [head] : [head, ...bodies];
}

/**
 * Writes a frame's buffers in one writev: no body is copied into a frame buffer first.
 * - 'tick' (the server): frames written in the same tick leave together in one syscall (a burst of
 *   dispatches), which on a 2-core VM costs less than a syscall and a wake-up each.
 * - 'now' (a worker): the frame leaves at once. A worker answering requests one after another in a
 *   single tick (each run blocks it) must not hold the first answer back until the last is done.
 */
export function writeFrame(socket: Socket, frame: Frame, flush: 'tick' | 'now'): void {
  const parts = encodeFrame(frame);
  const cork = flush === 'tick' ? socket.writableCorked === 0 : parts.length > 1;
  if (cork) socket.cork();
  for (const b of parts) socket.write(b);
  if (!cork) return;
  if (flush === 'tick') process.nextTick(() => socket.uncork());
  else socket.uncork();
}

/** Decodes one whole frame; bodies are slices of `buf`, which belongs to this frame alone. */
export function decodeFrame(buf: Buffer): Frame {
  const kind = buf.readUInt8(4) as MessageKind;
  const headerEnd = kPrefix + buf.readUInt32BE(5);
  const r = new BinaryReader(buf, kPrefix, headerEnd);
  switch (kind) {
    case MessageKind.Infer:
      return { kind, msg: readInfer(r) };
    case MessageKind.Result:
      return { kind, msg: readResult(r) };
    case MessageKind.Chunk:
      return { kind, msg: readChunk(r) };
    case MessageKind.Cancel:
      return { kind, msg: { id: r.id() } };
    case MessageKind.ChunkAck:
      return { kind, msg: { id: r.id(), bytes: r.u32() } };
    default:
      // The JSON-framed kinds: the compiler cannot tie the kind read above to the message's type.
      return { kind, msg: JSON.parse(buf.toString('utf8', kPrefix, headerEnd)) as never };
  }
}

const kIndependent = 1;
const kWithHeaders = 2;
const kStream = 1;
const kHasHeaders = 2;
const kInRing = 4;

function writeInfer(w: BinaryWriter, m: InferMessage, bodies: Buffer[]): void {
  w.id(m.batchId);
  w.u32(m.slot ?? 0);
  w.u8((m.independent ? kIndependent : 0) | (m.withHeaders ? kWithHeaders : 0));
  w.u32(m.requests.length);
  for (const r of m.requests) {
    const headers = m.withHeaders ? r.headers : undefined;
    w.id(r.id);
    w.u8((r.stream ? kStream : 0) | (headers ? kHasHeaders : 0) | (r.ring ? kInRing : 0));
    w.str(r.requestId);
    w.str(r.contentType);
    w.str(r.accept);
    if (headers) w.headers(headers);
    if (r.ring) {
      w.u32(r.ring.offset);
      w.u32(r.ring.length);
    }
    w.body(r.body, bodies);
  }
}

function readInfer(r: BinaryReader): InferMessage {
  const batchId = r.id();
  const slot = r.u32();
  const flags = r.u8();
  const n = r.u32();
  const requests = new Array<InvokeRequest>(n);
  for (let i = 0; i < n; i++) {
    const id = r.id();
    const f = r.u8();
    const req: InvokeRequest = { id, requestId: r.str(), contentType: r.str(), accept: r.str() };
    if (f & kStream) req.stream = true;
    if (f & kHasHeaders) req.headers = r.headers();
    if (f & kInRing) req.ring = { offset: r.u32(), length: r.u32() };
    req.body = r.body();
    requests[i] = req;
  }
  return {
    batchId,
    slot,
    requests,
    ...(flags & kIndependent ? { independent: true } : {}),
    ...(flags & kWithHeaders ? { withHeaders: true } : {}),
  };
}

function writeResult(w: BinaryWriter, m: ResultMessage, bodies: Buffer[]): void {
  w.id(m.batchId);
  w.f64(m.modelMicros);
  w.f64(m.runMicros);
  w.u32(m.responses.length);
  for (const x of m.responses) {
    w.id(x.id);
    writeHead(w, x);
    w.u8(x.error ? 1 : 0);
    if (x.error) {
      w.str(x.error.code);
      w.u16(x.error.status);
      w.str(x.error.message);
    }
    w.body(x.body, bodies);
  }
}

function readResult(r: BinaryReader): ResultMessage {
  const batchId = r.id();
  const modelMicros = r.f64();
  const runMicros = r.f64();
  const n = r.u32();
  const responses = new Array<WireResponse>(n);
  for (let i = 0; i < n; i++) {
    const x: WireResponse = { id: r.id(), ...readHead(r) };
    if (r.u8() === 1) x.error = { code: r.str(), status: r.u16(), message: r.str() };
    x.body = r.body();
    responses[i] = x;
  }
  return { batchId, modelMicros, runMicros, responses };
}

function writeHead(w: BinaryWriter, h: ResponseHead): void {
  w.u16(h.status);
  w.str(h.contentType);
  w.headers(h.headers);
}

function readHead(r: BinaryReader): ResponseHead {
  return { status: r.u16(), contentType: r.str(), headers: r.headers() };
}

function writeChunk(w: BinaryWriter, m: ChunkMessage, bodies: Buffer[]): void {
  w.u32(m.slot);
  w.id(m.id);
  w.u8(m.head ? 1 : 0);
  if (m.head) writeHead(w, m.head);
  w.body(m.body, bodies);
}

function readChunk(r: BinaryReader): ChunkMessage {
  const slot = r.u32();
  const id = r.id();
  const msg: ChunkMessage = { slot, id };
  if (r.u8() === 1) msg.head = readHead(r);
  msg.body = r.body();
  return msg;
}

export class FrameTooLargeError extends Error {
  constructor(
    readonly length: number,
    readonly limit: number,
  ) {
    super(`frame of ${length} bytes exceeds the limit of ${limit} bytes`);
  }
}
