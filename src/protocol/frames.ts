/**
 * The parent ⇄ worker wire protocol, used by both sides (src/server/workers in the server process, src/worker-process in
 * the child). One frame:
 *
 *   u32 BE  length of everything after this field
 *   u8      message kind (MessageKind)
 *   u32 BE  length of the JSON header
 *   ...     JSON header (small metadata only: names, ids, statuses, lengths)
 *   ...     payload: raw bytes (request/response bodies, tensor data) back to back, sliced by the
 *           lengths the header lists
 *
 * Bodies and tensors are never JSON-encoded on this pipe: a 256 KB float tensor as a JSON array
 * costs ~25x more per round trip than as bytes (practices-and-performance.md B.2).
 */
import type { WireError } from '../errors';

export const enum MessageKind {
  // parent → worker
  Load = 1,
  Infer = 2,
  Cancel = 3,
  // worker → parent
  Started = 9,
  Loaded = 10,
  LoadFailed = 11,
  Result = 12,
  Chunk = 13,
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
  workerId: string;
}

export interface LoadedMessage {
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
}

export interface StartedMessage {
  pid: number;
}

export interface LoadFailedMessage {
  error: WireError;
}

export interface WireRequest {
  id: number;
  /** The x-request-id the client got back: handlers log it, so one request can be followed across processes. */
  requestId: string;
  contentType: string;
  accept: string;
  headers: Record<string, string>;
  /** Set by the parent, from the payload slicing; not sent in the header. */
  body?: Buffer;
  bodyLength?: number;
  /** The client asked for a streamed response (intermediate chunks allowed). */
  stream?: boolean;
}

export interface InferMessage {
  batchId: number;
  requests: WireRequest[];
  /**
   * The requests are not a model batch: they travel in one frame only to share its round trip,
   * and the worker runs each on its own (batch_size 1 under a backlog).
   */
  independent?: boolean;
}

export interface WireResponse {
  id: number;
  status: number;
  contentType: string;
  headers: Record<string, string>;
  error?: WireError;
  body?: Buffer;
  bodyLength?: number;
}

export interface ResultMessage {
  batchId: number;
  /** Time spent in the model (handler + session.run) for the batch, µs. */
  modelMicros: number;
  responses: WireResponse[];
}

/** What goes on the wire before a streamed response's first chunk, and cannot change after it. */
export interface ResponseHead {
  status: number;
  contentType: string;
  headers: Record<string, string>;
}

export interface ChunkMessage {
  id: number;
  /** Only on a request's first chunk. */
  head?: ResponseHead;
  body?: Buffer;
  bodyLength?: number;
}

export interface CancelMessage {
  id: number;
}

export type Frame =
  | { kind: MessageKind.Load; msg: LoadMessage }
  | { kind: MessageKind.Infer; msg: InferMessage }
  | { kind: MessageKind.Cancel; msg: CancelMessage }
  | { kind: MessageKind.Started; msg: StartedMessage }
  | { kind: MessageKind.Loaded; msg: LoadedMessage }
  | { kind: MessageKind.LoadFailed; msg: LoadFailedMessage }
  | { kind: MessageKind.Result; msg: ResultMessage }
  | { kind: MessageKind.Chunk; msg: ChunkMessage };

const kPrefix = 9; // u32 length + u8 kind + u32 header length

/** Messages whose header carries a list of items with bodies sliced from the payload. */
function bodiesOf(frame: Frame): Array<{ body?: Buffer; bodyLength?: number }> {
  switch (frame.kind) {
    case MessageKind.Infer: return frame.msg.requests;
    case MessageKind.Result: return frame.msg.responses;
    case MessageKind.Chunk: return [frame.msg];
    default: return [];
  }
}

export function encodeFrame(frame: Frame): Buffer {
  const items = bodiesOf(frame);
  let payloadLength = 0;
  for (const item of items) {
    item.bodyLength = item.body ? item.body.length : 0;
    payloadLength += item.bodyLength;
  }
  const header = Buffer.from(JSON.stringify(frame.msg, omitBody));
  const out = Buffer.allocUnsafe(kPrefix + header.length + payloadLength);
  out.writeUInt32BE(out.length - 4, 0);
  out.writeUInt8(frame.kind, 4);
  out.writeUInt32BE(header.length, 5);
  header.copy(out, kPrefix);
  let offset = kPrefix + header.length;
  for (const item of items) {
    if (item.body) offset += item.body.copy(out, offset);
  }
  return out;
}

function omitBody(key: string, value: unknown): unknown {
  return key === 'body' ? undefined : value;
}

function decodeFrame(buf: Buffer): Frame {
  const kind = buf.readUInt8(4) as MessageKind;
  const headerLength = buf.readUInt32BE(5);
  const msg = JSON.parse(buf.toString('utf8', kPrefix, kPrefix + headerLength));
  const frame = { kind, msg } as Frame;
  let offset = kPrefix + headerLength;
  for (const item of bodiesOf(frame)) {
    const n = item.bodyLength ?? 0;
    // subarray, not a copy: the frame buffer is owned by this message alone.
    item.body = buf.subarray(offset, offset + n);
    offset += n;
  }
  return frame;
}

export class FrameTooLargeError extends Error {
  constructor(readonly length: number, readonly limit: number) {
    super(`frame of ${length} bytes exceeds the limit of ${limit} bytes`);
  }
}

/**
 * Incremental decoder for a byte stream. Chunks are kept in a list and joined once per frame, so a
 * multi-megabyte body arriving in 64 KB pieces is copied once, not once per piece.
 */
export class FrameReader {
  #chunks: Buffer[] = [];
  #buffered = 0;
  #need = 4;
  #frameLength = -1;

  /** Mutable: a spare worker's limit is only known once a model is assigned to it. */
  constructor(public maxFrameBytes: number, private readonly onFrame: (frame: Frame) => void) {}

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    while (this.#buffered >= this.#need) {
      const head = this.#take(this.#need);
      if (this.#frameLength < 0) {
        this.#frameLength = head.readUInt32BE(0);
        if (this.#frameLength > this.maxFrameBytes) throw new FrameTooLargeError(this.#frameLength, this.maxFrameBytes);
        this.#chunks.unshift(head);
        this.#buffered += 4;
        this.#need = 4 + this.#frameLength;
      } else {
        this.#frameLength = -1;
        this.#need = 4;
        this.onFrame(decodeFrame(head));
      }
    }
  }

  #take(n: number): Buffer {
    let out: Buffer;
    const first = this.#chunks[0];
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let filled = 0;
      while (filled < n) {
        const c = this.#chunks[0];
        const want = n - filled;
        if (c.length <= want) {
          c.copy(out, filled);
          filled += c.length;
          this.#chunks.shift();
        } else {
          c.copy(out, filled, 0, want);
          filled += want;
          this.#chunks[0] = c.subarray(want);
        }
      }
    }
    this.#buffered -= n;
    return out;
  }
}
