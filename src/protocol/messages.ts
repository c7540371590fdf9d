/**
 * The parent ⇄ worker protocol's messages, used by both sides (src/server/processes, src/server/hosts
 * and src/server/workers in the server process, src/worker-process in the child). Their bytes on the
 * wire are frame-codec.ts's; frame-reader.ts cuts a stream back into frames.
 *
 * A process holds one model (a dedicated worker) or many (a shared host): each model it holds has a
 * slot number, which Load, Infer, Unload and the answers to them carry. Request and batch ids are
 * unique across the server, so Cancel, ChunkAck and Result need no slot. Ids are 64-bit fields and
 * slots u32: protocol/ids.ts says why neither runs out.
 */
import type { WireError } from '../errors';
import type { ModelMetadata, ResponseHead, TensorInfo } from '../model-types';

/** onnxruntime's graph optimization levels, as its session options name them (onnx_graph_optimization_level). */
export const kGraphOptimizationLevels = ['all', 'extended', 'basic', 'disabled'] as const;
export type GraphOptimizationLevel = (typeof kGraphOptimizationLevels)[number];

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
  graphOptimizationLevel: GraphOptimizationLevel;
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

/**
 * One invoke request on the wire: the wire form of the gateway's ModelRequest (src/gateway/gateway.ts),
 * plus the id its job travels under; an Infer frame carries a batch of them to the worker's handler.
 */
export interface InvokeRequest {
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
  /**
   * The body is not in the frame but in the worker's body ring (shared memory, body-ring.ts): where.
   * Set by the server on the copy of the request it writes; the worker reads the body from there.
   */
  ring?: RingRegion;
}

/** A request body's place in a worker's body ring: its region starts at `offset` and holds a `length`-byte body. */
export interface RingRegion {
  offset: number;
  length: number;
}

export interface InferMessage {
  batchId: number;
  /** The model it is for; absent = 0, a dedicated worker's one model. */
  slot?: number;
  requests: InvokeRequest[];
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
