/**
 * The parent ⇄ worker protocol's messages, used by both sides; their bytes are frame-codec.ts's.
 * Each model a process holds has a slot number, which Load, Infer, Unload and their answers carry.
 * Request and batch ids are unique across the server, so Cancel, ChunkAck and Result need no slot.
 */
import type { WireError } from '../errors';
import type { ModelMetadata, ResponseHead, TensorInfo } from '../model-types';

/** onnxruntime's graph optimization levels, as its session options name them. */
export const kGraphOptimizationLevels = ['all', 'extended', 'basic', 'disabled'] as const;
export type GraphOptimizationLevel = (typeof kGraphOptimizationLevels)[number];
/** onnx_graph_optimization_level: a level, or auto (the worker picks one per model: worker-process/optimization-level.ts). */
export const kGraphOptimizationSettings = ['auto', ...kGraphOptimizationLevels] as const;

/** A KServe ModelInferRequest or ModelInferResponse in protobuf, as gRPC ModelInfer carries it: the worker reads and writes it (worker-process/model-infer-codec.ts). */
export const MODEL_INFER_MEDIA_TYPE = 'application/vnd.kserve.model-infer+protobuf';

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
  graphOptimizationLevel: (typeof kGraphOptimizationSettings)[number];
  decodeInputRequest: boolean;
  /** Run batches as they arrive (preload_model), not one after another (the parent counts only the oldest as running). */
  concurrentBatches: boolean;
  /** Largest answer (or streamed chunk) the worker may send: it checks each one before sending. */
  maxResponseSize: number;
  maxStreamBuffer: number;
  maxRequestElements: number;
  workerId: string;
  /** 0 in a dedicated worker. */
  slot: number;
  /** The process holds other models too: it stays in its own directory, and the model's handler must use context.modelDir. */
  shared: boolean;
}

export interface LoadedMessage {
  slot: number;
  pid: number;
  /** Handler init + session creation, µs. */
  loadMicros: number;
  sessionMicros: number;
  executionProvider: string;
  /** The level the session was created with: auto resolved for this model. */
  graphOptimizationLevel: GraphOptimizationLevel;
  inputs: TensorInfo[];
  outputs: TensorInfo[];
  metadata: ModelMetadata;
  /** The handler streams (exports `streaming = true`): the parent sends it one request per batch. */
  streaming: boolean;
  /** Resident growth across this load (loads run one at a time): the model's own cost in a shared host. */
  rssGrowthBytes: number;
}

/** The wire form of a door's Payload (gateway/door.ts), plus the id its job travels under. */
export interface InvokeRequest {
  id: number;
  /** The x-request-id the client got back, for handlers' logs. */
  requestId: string;
  contentType: string;
  accept: string;
  /** Lower-case names; sent only to custom handlers (InferMessage.withHeaders): the default one never reads them. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** As sent: one buffer, or the pieces the client's socket delivered (written back to back). As received: one slice. */
  body?: Buffer | readonly Buffer[];
  stream?: boolean;
  /** The body is not in the frame but in this region of the worker's body ring (shared memory, body-handoff.ts). */
  ring?: { offset: number; length: number };
}

export interface InferMessage {
  batchId: number;
  /** Absent = 0, a dedicated worker's one model. */
  slot?: number;
  requests: InvokeRequest[];
  /** Not a model batch: the requests share the frame's round trip only, and each runs and is answered on its own. */
  independent?: boolean;
  /** Send the requests' headers: the model's handler is a custom one, which may read them. */
  withHeaders?: boolean;
}

export interface WireResponse extends ResponseHead {
  id: number;
  error?: WireError;
  body?: Buffer;
}

/** Answers of a batch: all of them, or (an independent batch) one at a time as each is ready. */
export interface ResultMessage {
  batchId: number;
  /** Handler + session.run behind this frame's answers, µs. */
  modelMicros: number;
  /** The model's session run time in this shared host since its load, µs (0 in a dedicated worker). */
  runMicros: number;
  responses: WireResponse[];
}

export interface ChunkMessage {
  slot: number;
  id: number;
  /** Only on a request's first chunk. */
  head?: ResponseHead;
  body?: Buffer;
}

export type Frame =
  | { kind: MessageKind.Load; msg: LoadMessage }
  | { kind: MessageKind.Infer; msg: InferMessage }
  | { kind: MessageKind.Cancel; msg: { id: number } }
  | { kind: MessageKind.ChunkAck; msg: { id: number; bytes: number } }
  | { kind: MessageKind.Unload | MessageKind.Unloaded; msg: { slot: number } }
  /** sessionBytes: what the smallest session costs, measured by a shared host (0 elsewhere). */
  | { kind: MessageKind.Started; msg: { pid: number; sessionBytes: number } }
  | { kind: MessageKind.Loaded; msg: LoadedMessage }
  | { kind: MessageKind.LoadFailed; msg: { slot: number; error: WireError } }
  | { kind: MessageKind.Result; msg: ResultMessage }
  | { kind: MessageKind.Chunk; msg: ChunkMessage };
