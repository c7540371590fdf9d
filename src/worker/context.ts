/**
 * The `context` a handler receives (MMS's Context, in Node terms): what the model is, the ONNX
 * session, the requests' headers, and per-request response setters.
 */
import type { InferenceSession } from 'onnxruntime-node';
import type { TensorInfo } from '../protocol/frames';

export interface HandlerRequest {
  /** Raw request body as received by the server. */
  body: Buffer;
  contentType: string;
  accept: string;
  headers: Record<string, string>;
  /** Parsed JSON body when decode_input_request=true and the body is JSON; else undefined. */
  data?: unknown;
}

export interface ResponseSlot {
  status: number;
  contentType: string;
  headers: Record<string, string>;
}

export interface SystemProperties {
  model_dir: string;
  gpu_id: number;
  batch_size: number;
  server_name: string;
  server_version: string;
}

/** What every batch's context shares: the model and its session. */
export interface ModelInfo {
  modelName: string;
  modelDir: string;
  gpuId: number;
  batchSize: number;
  session: InferenceSession;
  inputs: readonly TensorInfo[];
  outputs: readonly TensorInfo[];
}

/**
 * One context per batch (a preload_model process runs several batches at once), built on the
 * model's shared info; `initialize` receives one with an empty batch.
 */
export class HandlerContext {
  readonly modelName: string;
  readonly modelDir: string;
  readonly gpuId: number;
  readonly batchSize: number;
  readonly session: InferenceSession;
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  readonly systemProperties: SystemProperties;
  /** Per-request scratch space handlers can use to pass data between preprocess and postprocess. */
  readonly state: Array<Record<string, unknown>>;
  readonly responses: ResponseSlot[];

  constructor(model: ModelInfo, readonly requests: HandlerRequest[], private readonly intermediate: (index: number, chunk: Buffer) => void) {
    this.modelName = model.modelName;
    this.modelDir = model.modelDir;
    this.gpuId = model.gpuId;
    this.batchSize = model.batchSize;
    this.session = model.session;
    this.inputs = model.inputs;
    this.outputs = model.outputs;
    this.systemProperties = { model_dir: model.modelDir, gpu_id: model.gpuId, batch_size: model.batchSize, server_name: 'sagemaker-mme-node', server_version: '0.1.0' };
    this.state = requests.map(() => ({}));
    this.responses = requests.map(() => ({ status: 200, contentType: '', headers: {} }));
  }

  getRequestHeader(index: number, name: string): string | undefined {
    return this.requests[index]?.headers[name.toLowerCase()];
  }

  getAllRequestHeaders(index: number): Record<string, string> {
    return { ...this.requests[index]?.headers };
  }

  setResponseStatus(index: number, status: number): void {
    this.responses[index].status = status;
  }

  setResponseContentType(index: number, contentType: string): void {
    this.responses[index].contentType = contentType;
  }

  setResponseHeader(index: number, name: string, value: string): void {
    this.responses[index].headers[name.toLowerCase()] = value;
  }

  /** Streams a chunk to the client of request `index` before the final response (chunked encoding). */
  sendIntermediate(index: number, chunk: Buffer | string | object): void {
    this.intermediate(index, toBuffer(chunk));
  }
}

export function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === 'string') return Buffer.from(value);
  return Buffer.from(JSON.stringify(value));
}
