/**
 * The parent ⇄ worker wire protocol, used by both sides (src/server/workers in the server process, src/worker-process in
 * the child). One frame:
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
 *
 * A process holds one model (a dedicated worker) or many (a shared host): each model it holds has a
 * slot number, which Load, Infer, Unload and the answers to them carry. Request and batch ids are
 * unique across the server, so Cancel, ChunkAck and Result need no slot. Ids are 64-bit fields and
 * slots u32: protocol/ids.ts says why neither runs out.
 *
 * Bodies are never serialised: a frame is written as its header followed by the body buffers
 * themselves (one writev), and read back as slices of the frame buffer.
 */
import type { Socket } from 'node:net';
import { BinaryReader, BinaryWriter } from './binary';
import { MAX_U32 } from './ids';
import type { WireError } from '../errors';

export const enum MessageKind {
  // parent → worker
  Load = 1,
  Infer = 2,
  Cancel = 3,
  /** The parent handed `bytes` of a stream's chunks to the client's socket: the worker may send more. */
  ChunkAck = 4,
  /** Release a slot's session (a shared host); its batches sent before this run first. */
  Unload = 5,
  // worker → parent
  Started = 9,
  Loaded = 10,
  LoadFailed = 11,
  Result = 12,
  Chunk = 13,
  Unloaded = 14,
}

export interface TensorInfo {
  name: string;
  type: string;
  /** Symbolic dimensions are strings (e.g. "batch"), fixed ones numbers. */
  shape: Array<number | string>;
  /**
   * A ZipMap output (`type` is then its ONNX type, e.g. seq(map(int64,tensor(float)))): its class
   * labels in column order (int64 labels beyond 2^53 as decimal strings), and the tensor the
   * session returns in its place, [rows, classes].
   */
  classLabels?: Array<number | string>;
  tensor?: { type: string; shape: Array<number | string> };
}

/** What the model file says about itself, shown by describe. */
export interface ModelMetadata {
  irVersion: number;
  producerName: string;
  producerVersion: string;
  domain: string;
  modelVersion: number;
  docString: string;
  /** Imported opsets by domain ("ai.onnx" for the default domain). */
  opsets: Record<string, number>;
  /** The model's custom metadata_props. */
  metadataProps: Record<string, string>;
}

export interface LoadMessage {
  modelName: string;
  modelDir: string;
  onnxPath: string;
  handlerPath: string | null;
  batchSize: number;
  /** -1 = CPU. */
  gpuId: number;
  intraOpThreads: number;
  interOpThreads: number;
  decodeInputRequest: boolean;
  /**
   * Run batches as they arrive (a preload_model process: its slots share one session), rather
   * than one after another (a pipelined worker: the parent assumes only the oldest is running).
   */
  concurrentBatches: boolean;
  /** Largest answer (or streamed chunk) the worker may send: it checks each one before sending. */
  maxResponseSize: number;
  /** Most bytes of one stream's chunks on their way to its client before the handler must wait (max_stream_buffer). */
  maxStreamBuffer: number;
  /** Most tensor elements one request may decode into (max_request_elements). */
  maxRequestElements: number;
  workerId: string;
  /** Which of the process's models this is (0 in a dedicated worker). */
  slot: number;
  /** The process holds other models too: it stays in its own directory, and the model's handler must use context.modelDir. */
  shared: boolean;
}

export interface LoadedMessage {
  slot: number;
  pid: number;
  /** Wall time of the whole load in the worker (handler init + session creation), µs. */
  loadMicros: number;
  sessionMicros: number;
  executionProvider: string;
  inputs: TensorInfo[];
  outputs: TensorInfo[];
  metadata: ModelMetadata;
  /** The handler streams (exports `streaming = true`): the parent sends it one request per batch. */
  streaming: boolean;
  /**
   * How much the process's resident memory grew across this load (loads run one at a time in a
   * process), bytes: the model's own cost in a shared host. Memory freed by an earlier unload and
   * reused here does not show as growth.
   */
  rssGrowthBytes: number;
}

export interface StartedMessage {
  pid: number;
  /** What the smallest session costs in this process, bytes: measured by a shared host, 0 elsewhere. */
  sessionBytes: number;
}

export interface LoadFailedMessage {
  slot: number;
  error: WireError;
}

export interface UnloadMessage {
  slot: number;
}

export interface UnloadedMessage {
  slot: number;
}

export interface WireRequest {
  id: number;
  /** The x-request-id the client got back: handlers log it, so one request can be followed across processes. */
  requestId: string;
  contentType: string;
  accept: string;
  /**
   * The client's headers, lower-case names (Node's IncomingHttpHeaders will do: lists are joined).
   * Sent only to custom handlers (InferMessage.withHeaders): the default handler never reads them.
   */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** As sent: one buffer, or the pieces the client's socket delivered (written back to back). As received: one slice. */
  body?: Buffer | readonly Buffer[];
  /** The client asked for a streamed response (intermediate chunks allowed). */
  stream?: boolean;
}

export interface InferMessage {
  batchId: number;
  /** The model it is for; absent = 0, a dedicated worker's one model. */
  slot?: number;
  requests: WireRequest[];
  /**
   * The requests are not a model batch: they travel in one frame only to share its round trip,
   * and the worker runs each on its own (batch_size 1 under a backlog), answering each at once.
   */
  independent?: boolean;
  /** Send the requests' headers: the model's handler is a custom one, which may read them. */
  withHeaders?: boolean;
}

export interface WireResponse {
  id: number;
  status: number;
  contentType: string;
  headers: Record<string, string>;
  error?: WireError;
  body?: Buffer;
}

/** Answers of a batch: all of them, or (an independent batch) one at a time as each is ready. */
export interface ResultMessage {
  batchId: number;
  /** Model time (handler + session.run) behind each answer of this frame, µs: a batch's one run, or an independent request's own. */
  modelMicros: number;
  /**
   * The model's session runs in this shared host since its load, µs, in total (the latest answer
   * has the newest figure): how much of the host's thread the model takes. 0 in a dedicated worker.
   */
  runMicros: number;
  responses: WireResponse[];
}

/** What goes on the wire before a streamed response's first chunk, and cannot change after it. */
export interface ResponseHead {
  status: number;
  contentType: string;
  headers: Record<string, string>;
}

export interface ChunkMessage {
  /** The model whose request it is, as in InferMessage. */
  slot: number;
  id: number;
  /** Only on a request's first chunk. */
  head?: ResponseHead;
  body?: Buffer;
}

export interface CancelMessage {
  id: number;
}

export interface ChunkAckMessage {
  id: number;
  bytes: number;
}

export type Frame =
  | { kind: MessageKind.Load; msg: LoadMessage }
  | { kind: MessageKind.Infer; msg: InferMessage }
  | { kind: MessageKind.Cancel; msg: CancelMessage }
  | { kind: MessageKind.ChunkAck; msg: ChunkAckMessage }
  | { kind: MessageKind.Unload; msg: UnloadMessage }
  | { kind: MessageKind.Unloaded; msg: UnloadedMessage }
  | { kind: MessageKind.Started; msg: StartedMessage }
  | { kind: MessageKind.Loaded; msg: LoadedMessage }
  | { kind: MessageKind.LoadFailed; msg: LoadFailedMessage }
  | { kind: MessageKind.Result; msg: ResultMessage }
  | { kind: MessageKind.Chunk; msg: ChunkMessage };

const kPrefix = 9; // u32 length + u8 kind + u32 header length

/** A frame as buffers to write back to back: the prefix and header, then each body as it is. */
export function encodeFrame(frame: Frame): Buffer[] {
  const w = new BinaryWriter();
  w.skip(kPrefix);
  const bodies: Buffer[] = [];
  switch (frame.kind) {
    case MessageKind.Infer: writeInfer(w, frame.msg, bodies); break;
    case MessageKind.Result: writeResult(w, frame.msg, bodies); break;
    case MessageKind.Chunk: writeChunk(w, frame.msg, bodies); break;
    case MessageKind.Cancel: w.id(frame.msg.id); break;
    case MessageKind.ChunkAck: w.id(frame.msg.id); w.u32(frame.msg.bytes); break;
    default: w.raw(Buffer.from(JSON.stringify(frame.msg)));
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
  if (flush === 'tick') {
    if (socket.writableCorked === 0) {
      socket.cork();
      process.nextTick(() => socket.uncork());
    }
    for (const b of parts) socket.write(b);
    return;
  }
  if (parts.length === 1) {
    socket.write(parts[0]);
    return;
  }
  socket.cork();
  for (const b of parts) socket.write(b);
  socket.uncork();
}

/** Decodes one whole frame; bodies are slices of `buf`, which belongs to this frame alone. */
export function decodeFrame(buf: Buffer): Frame {
  const kind = buf.readUInt8(4) as MessageKind;
  const headerEnd = kPrefix + buf.readUInt32BE(5);
  const r = new BinaryReader(buf, kPrefix, headerEnd);
  switch (kind) {
    case MessageKind.Infer: return { kind, msg: readInfer(r) };
    case MessageKind.Result: return { kind, msg: readResult(r) };
    case MessageKind.Chunk: return { kind, msg: readChunk(r) };
    case MessageKind.Cancel: return { kind, msg: { id: r.id() } };
    case MessageKind.ChunkAck: return { kind, msg: { id: r.id(), bytes: r.u32() } };
    default: return { kind, msg: JSON.parse(buf.toString('utf8', kPrefix, headerEnd)) } as Frame;
  }
}

const kIndependent = 1;
const kWithHeaders = 2;
const kStream = 1;
const kHasHeaders = 2;

function writeInfer(w: BinaryWriter, m: InferMessage, bodies: Buffer[]): void {
  w.id(m.batchId);
  w.u32(m.slot ?? 0);
  w.u8((m.independent ? kIndependent : 0) | (m.withHeaders ? kWithHeaders : 0));
  w.u32(m.requests.length);
  for (const r of m.requests) {
    const headers = m.withHeaders ? r.headers : undefined;
    w.id(r.id);
    w.u8((r.stream ? kStream : 0) | (headers ? kHasHeaders : 0));
    w.str(r.requestId);
    w.str(r.contentType);
    w.str(r.accept);
    if (headers) w.headers(headers);
    w.body(r.body, bodies);
  }
}

function readInfer(r: BinaryReader): InferMessage {
  const batchId = r.id();
  const slot = r.u32();
  const flags = r.u8();
  const n = r.u32();
  const requests: WireRequest[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const id = r.id();
    const f = r.u8();
    const req: WireRequest = { id, requestId: r.str(), contentType: r.str(), accept: r.str() };
    if (f & kStream) req.stream = true;
    if (f & kHasHeaders) req.headers = r.headers();
    req.body = r.body();
    requests[i] = req;
  }
  return { batchId, slot, requests, ...(flags & kIndependent ? { independent: true } : {}), ...(flags & kWithHeaders ? { withHeaders: true } : {}) };
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
  const responses: WireResponse[] = new Array(n);
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
  constructor(readonly length: number, readonly limit: number) {
    super(`frame of ${length} bytes exceeds the limit of ${limit} bytes`);
  }
}

/** The largest read into the reader's own buffer (readTarget): frames that fit arrive many to a read. */
const kScratchBytes = 64 * 1024;

/**
 * Incremental decoder for a byte stream, fed in one of two ways:
 * - push(chunk): buffers the socket allocated (a 'data' listener). A frame that arrives whole in a
 *   chunk is decoded in place; one cut across chunks is copied once into a buffer of its own size.
 * - readTarget() / wrote(): the socket reads straight into memory the reader hands it (net.Socket's
 *   `onread`), so a large frame lands in its own buffer with no copy and no buffer per read: the
 *   external-memory churn that made V8 run back-to-back collections on large bodies.
 * Either way a decoded frame's bodies are slices of memory nothing writes to again; in the second way
 * each frame starts on an 8-byte boundary of its own buffer, so its bodies keep their alignment.
 */
export class FrameReader {
  /** The frame being filled, allocated once its length is known, and how much of it has arrived. */
  #frame: Buffer | null = null;
  #filled = 0;
  /** A length prefix cut across reads. */
  readonly #prefix = Buffer.alloc(4);
  #prefixFilled = 0;
  #scratch: Buffer | null = null;

  /** Mutable: a spare worker's limit is only known once a model is assigned to it. */
  constructor(public maxFrameBytes: number, private readonly onFrame: (frame: Frame) => void) {}

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
    if (src.buffer !== frame.buffer || src.byteOffset !== frame.byteOffset + this.#filled) src.copy(frame, this.#filled, from, from + n);
    this.#filled += n;
    if (this.#filled === frame.length) {
      this.#frame = null;
      this.onFrame(decodeFrame(frame));
    }
    return from + n;
  }
}
