/**
 * The `context` a handler receives (MMS's Context, in Node terms): what the model is, the ONNX
 * session, the requests' headers, and per-request response setters.
 */
import * as ort from 'onnxruntime-node';
import { MmeError, quote, quoteValue } from '../errors';
import { SERVER_NAME, SERVER_VERSION } from '../oip/server-identity';
import type { ResponseHead, TensorInfo } from '../model-types';
import type { PlainTensor } from './tensor';

export interface HandlerRequest {
  body: Buffer;
  contentType: string;
  /** The Accept header; SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT when the client sent none or accepts any type. */
  accept: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The x-request-id the server answers this request with (MMS's context.get_request_id). */
  requestId: string;
  /** With decode_input_request=true (the default): a JSON body parsed, a text/* body as a string; else undefined. */
  data?: unknown;
}

export interface SystemProperties {
  model_dir: string;
  gpu_id: number;
  batch_size: number;
  server_name: string;
  server_version: string;
}

/** What every batch's context shares: the model and its session. */
export type ModelInfo = Pick<HandlerContext, 'modelName' | 'modelDir' | 'gpuId' | 'batchSize' | 'session'> &
  Pick<HandlerContext, 'inputs' | 'outputs' | 'streaming' | 'maxRequestElements'> & { maxStreamBuffer: number };

/** Sends one chunk of request `index`; `head` rides along with that request's first chunk. */
export type SendChunk = (index: number, chunk: Buffer, head?: ResponseHead) => void;

/** Most characters a response's content type and headers may hold together: they travel in a frame's header. */
const kMaxHeadChars = 64 * 1024;
/** What Node's http module accepts in a header value: no control character but tab, nothing past U+00FF. */
const kHeaderValue = /^[\t\x20-\x7e\x80-\xff]*$/;
/** An HTTP token (RFC 9110): what a header name must be. */
const kHeaderName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers that frame the response: the server sets them, and a handler's would contradict its own. */
const kFramingHeaders = new Set(['content-length', 'transfer-encoding', 'connection']);
const kVisible = 'a string of visible characters, spaces and tabs (no control characters)';

const defaultHead = (): ResponseHead => ({ status: 200, contentType: '', headers: {} });

/**
 * What is wrong with a response head a handler set, or null. Every head is checked before a frame
 * carries it: a wrong type or value fails its own request with a 500 that says what, instead of
 * throwing in the frame encoder, outside any request, where it would take the process down.
 */
export function headFault(head: unknown): string | null {
  if (typeof head !== 'object' || head === null)
    return `the response of this request to ${quoteValue(head)}: leave context.responses as the context made them`;
  const { status, contentType, headers } = head as Partial<ResponseHead>;
  if (!Number.isInteger(status) || status! < 200 || status! > 599)
    return `status ${quoteValue(status)}: it must be an integer from 200 to 599`;
  if (typeof contentType !== 'string' || !kHeaderValue.test(contentType))
    return `the content type to ${quoteValue(contentType)}: it must be ${kVisible}`;
  if (typeof headers !== 'object' || headers === null)
    return `the response headers to ${quoteValue(headers)}: they must be an object of names to values`;
  let chars = contentType.length;
  // for-in, as the frame encoder walks them: inherited enumerable names included.
  for (const name in headers) {
    const value: unknown = headers[name];
    const set = `response header ${quote(name)} to ${quoteValue(value)}`;
    if (!kHeaderName.test(name))
      return `${set}: a header name must be an HTTP token (letters, digits and !#$%&'*+-.^_\`|~)`;
    if (kFramingHeaders.has(name.toLowerCase())) return `${set}: the server sets ${name.toLowerCase()} itself`;
    if (typeof value !== 'string' || !kHeaderValue.test(value)) return `${set}: a header value must be ${kVisible}`;
    chars += name.length + value.length;
    if (chars > kMaxHeadChars)
      return `${set}: the content type and headers of a response may hold at most ${kMaxHeadChars} characters in all`;
  }
  return null;
}

const handlerMistake = (fault: string) => new MmeError('MME_ERR_MODEL_ERROR', `the handler set ${fault}`);

/** One context per batch (a preload_model process runs several at once); `initialize` gets one with an empty batch. */
export class HandlerContext {
  // Set from the ModelInfo in the constructor.
  declare readonly modelName: string;
  declare readonly modelDir: string;
  declare readonly gpuId: number;
  declare readonly batchSize: number;
  declare readonly session: ort.InferenceSession;
  declare readonly inputs: readonly TensorInfo[];
  declare readonly outputs: readonly TensorInfo[];
  /** The handler exports `streaming = true`: it may send intermediate chunks, one request per batch. */
  declare readonly streaming: boolean;
  declare readonly maxRequestElements: number;
  readonly systemProperties: SystemProperties;
  /** Per-request scratch space handlers can use to pass data between preprocess and postprocess. */
  readonly state: Array<Record<string, unknown>>;
  /** Behind a getter: a handler may change a head, never replace the array the worker reads them from. */
  readonly #responses: ResponseHead[];
  readonly #cancelled = new Set<number>();
  readonly #streamed = new Set<number>();
  /** Streamed bytes per request not yet acknowledged by the server. */
  readonly #unacked: number[] = [];
  #drainWaiters: Array<{ index: number; resolve: () => void }> = [];
  readonly #streamLimit: number;

  constructor(
    model: ModelInfo,
    readonly requests: HandlerRequest[],
    private readonly sendChunk: SendChunk,
  ) {
    const { maxStreamBuffer, ...info } = model;
    Object.assign(this, info);
    this.#streamLimit = maxStreamBuffer;
    this.systemProperties = {
      model_dir: model.modelDir,
      gpu_id: model.gpuId,
      batch_size: model.batchSize,
      server_name: SERVER_NAME,
      server_version: SERVER_VERSION,
    };
    this.state = requests.map(() => ({}));
    this.#responses = requests.map(defaultHead);
  }

  /** Each request's response head (status, content type, headers), as the setters below leave them. */
  get responses(): ResponseHead[] {
    return this.#responses;
  }

  /** Once the handler is done: a faulty head is replaced by the defaults, and its request gets the error. */
  checkResponses(): Array<MmeError | null> {
    return this.requests.map((_, i) => {
      const fault = headFault(this.#responses[i]);
      if (!fault) return null;
      this.#responses[i] = defaultHead();
      return handlerMistake(fault);
    });
  }

  /** Plain tensors or ort.Tensors in, plain tensors out: a handler in a model directory cannot require onnxruntime-node. */
  async run(feeds: Record<string, PlainTensor | ort.Tensor>): Promise<Record<string, PlainTensor>> {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const [name, t] of Object.entries(feeds)) {
      ortFeeds[name] = t instanceof ort.Tensor ? t : new ort.Tensor(t.type as never, t.data as never, t.dims);
    }
    const out = await this.session.run(ortFeeds);
    const result: Record<string, PlainTensor> = {};
    for (const [name, t] of Object.entries(out))
      result[name] = { type: t.type, dims: t.dims as number[], data: t.data };
    return result;
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
    // Whatever a handler passes: headFault says what is wrong with it.
    this.responses[index].headers[String(name).toLowerCase()] = value;
  }

  /**
   * Streams a chunk to the client of request `index` ahead of the final response (HTTP/1.1 chunked
   * encoding). The status and headers set so far go out with the first chunk and cannot change
   * after it. Returns false and sends nothing once the client has gone: stop work on that request.
   */
  sendIntermediate(index: number, chunk: Buffer | string | object): boolean {
    if (!this.streaming) {
      throw new Error(
        'context.sendIntermediate needs a streaming handler: export `streaming = true` from the handler module (the server then runs its requests one per batch)',
      );
    }
    if (!this.requests[index])
      throw new Error(
        `context.sendIntermediate: request index ${index} is not in this batch of ${this.requests.length}`,
      );
    if (this.#cancelled.has(index)) return false;
    const body = toBuffer(chunk);
    const pending = this.#unacked[index] ?? 0;
    if (pending > 0 && pending + body.length > this.#streamLimit) {
      throw new Error(
        `the client of this stream is not reading: ${pending} bytes of chunks are still waiting to reach it, and max_stream_buffer is ${this.#streamLimit}; await context.drained(${index}) before sending more`,
      );
    }
    const first = !this.#streamed.has(index);
    const fault = first ? headFault(this.#responses[index]) : null;
    if (fault) throw handlerMistake(fault);
    this.#unacked[index] = pending + body.length;
    this.#streamed.add(index);
    this.sendChunk(index, body, first ? this.#responses[index] : undefined);
    return true;
  }

  /**
   * Resolves once the chunks of request `index` have mostly reached its client (at most half of
   * max_stream_buffer still on the way), or it has gone: await it between chunks, and a slow
   * client slows the handler instead of filling the server's memory.
   */
  drained(index: number): Promise<void> {
    if (this.#isDrained(index)) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push({ index, resolve }));
  }

  acknowledge(index: number, bytes: number): void {
    this.#unacked[index] = Math.max(0, (this.#unacked[index] ?? 0) - bytes);
    this.#wakeDrained();
  }

  #isDrained(index: number): boolean {
    return this.#cancelled.has(index) || (this.#unacked[index] ?? 0) <= this.#streamLimit / 2;
  }

  #wakeDrained(): void {
    const waiting = this.#drainWaiters;
    this.#drainWaiters = [];
    for (const w of waiting) {
      if (this.#isDrained(w.index)) w.resolve();
      else this.#drainWaiters.push(w);
    }
  }

  /** The x-request-id of request `index`: put it in log lines to tie them to the server's. */
  getRequestId(index: number): string {
    return this.requests[index]?.requestId ?? '';
  }

  /** The client of request `index` disconnected: a long-running handler should stop and return anything. */
  isCancelled(index: number): boolean {
    return this.#cancelled.has(index);
  }

  cancel(index: number): void {
    this.#cancelled.add(index);
    this.#wakeDrained();
  }
}

export function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === 'string') return Buffer.from(value);
  return Buffer.from(JSON.stringify(value));
}
