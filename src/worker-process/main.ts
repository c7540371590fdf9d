/**
 * Entry point of a worker process: one model, one ONNX session, one batch at a time.
 * Talks to the parent over fd 3 (a socketpair the parent created) with the frames of
 * src/protocol/frames.ts; stdout/stderr are free for logs, which the parent prefixes and forwards.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { MmeError, isMmeError, looksLikeOutOfMemory, type WireError } from '../errors';
import {
  FrameReader, MessageKind, writeFrame, type Frame, type InferMessage, type LoadMessage, type WireRequest, type WireResponse,
} from '../protocol/frames';
import { HandlerContext, toBuffer, type ModelInfo } from './context';
import { loadHandler, type Handler } from './handler';
import { toHandlerRequest } from './handler-request';
import { openSession } from './session';
import { warmUpRuntime } from './warmup';

const kMaxFrame = 2 ** 31 - 1;
const channel = new net.Socket({ fd: 3, readable: true, writable: true });

let handler: Handler | null = null;
let concurrentBatches = false;
/** Tail of the one-at-a-time chain of a pipelined worker. */
let serial: Promise<void> = Promise.resolve();
let model: ModelInfo | null = null;
let decodeInput = true;
let maxResponseSize = Infinity;
/** Request id → the context running it, so a Cancel frame can reach the handler. */
const running = new Map<number, { ctx: HandlerContext; index: number }>();

function send(frame: Frame): void {
  writeFrame(channel, frame, 'now');
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

const reader = new FrameReader(kMaxFrame, (frame) => {
  switch (frame.kind) {
    case MessageKind.Load:
      void load(frame.msg);
      break;
    case MessageKind.Infer:
      if (concurrentBatches) void runBatch(frame.msg);
      else serial = serial.then(() => runBatch(frame.msg));
      break;
    case MessageKind.Cancel: {
      const r = running.get(frame.msg.id);
      r?.ctx.cancel(r.index);
      break;
    }
    case MessageKind.ChunkAck: {
      const r = running.get(frame.msg.id);
      r?.ctx.acknowledge(r.index, frame.msg.bytes);
      break;
    }
    default:
      break;
  }
});

channel.on('data', (chunk: Buffer) => reader.push(chunk));
// Started goes out once the runtime is warm: a spare worker then loads a model in milliseconds.
warmUpRuntime().then(
  () => send({ kind: MessageKind.Started, msg: { pid: process.pid } }),
  (err) => {
    log(`onnxruntime failed to initialise: ${(err as Error).message}`);
    process.exit(70);
  },
);
// The parent is gone (or closed us): nothing can reach us any more, so leave at once.
channel.on('end', () => process.exit(0));
channel.on('error', () => process.exit(0));

async function load(msg: LoadMessage): Promise<void> {
  const t0 = performance.now();
  try {
    // A spare worker was started before its model was known; handlers expect the model dir as cwd.
    process.chdir(msg.modelDir);
    concurrentBatches = msg.concurrentBatches;
    const opened = await openSession(msg, log);
    const sessionMicros = Math.round((performance.now() - t0) * 1000);
    handler = loadHandler(msg.handlerPath, msg.modelDir);
    decodeInput = msg.decodeInputRequest;
    maxResponseSize = msg.maxResponseSize;
    model = {
      // The parent sends a streaming handler one request per batch, whatever batch_size says.
      modelName: msg.modelName, modelDir: msg.modelDir, gpuId: msg.gpuId, batchSize: handler.streaming ? 1 : msg.batchSize,
      session: opened.session, inputs: opened.inputs, outputs: opened.outputs, streaming: handler.streaming, maxStreamBuffer: msg.maxStreamBuffer,
    };
    await handler.initialize(new HandlerContext(model, [], () => undefined));
    send({
      kind: MessageKind.Loaded,
      msg: {
        pid: process.pid,
        loadMicros: Math.round((performance.now() - t0) * 1000),
        sessionMicros,
        executionProvider: opened.executionProvider,
        inputs: opened.inputs,
        outputs: opened.outputs,
        metadata: opened.metadata,
        streaming: handler.streaming,
      },
    });
  } catch (err) {
    send({ kind: MessageKind.LoadFailed, msg: { error: loadError(err) } });
  }
}

function loadError(err: unknown): WireError {
  if (isMmeError(err)) return err.toWire();
  const message = String((err as Error)?.message ?? err);
  if (looksLikeOutOfMemory(message) || err instanceof RangeError) {
    return new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `not enough memory to load the model: ${message}`).toWire();
  }
  // A file onnxruntime cannot parse or run is a bad artifact (400), as MMS treats invalid archives.
  return new MmeError('MME_ERR_INVALID_MODEL', `the model could not be loaded: ${message}`).toWire();
}

async function runBatch(batch: InferMessage): Promise<void> {
  // Independent requests travel together only to save round trips: each runs as its own batch of
  // one, and its answer leaves the moment it is ready. Holding it for the next would be a bet on
  // how long that one runs, and a next request that blocks would keep it forever.
  const groups = batch.independent ? batch.requests.map((r) => [r]) : [batch.requests];
  for (const group of groups) {
    const t0 = performance.now();
    const responses = await runGroup(group);
    send({ kind: MessageKind.Result, msg: { batchId: batch.batchId, modelMicros: Math.round((performance.now() - t0) * 1000), responses } });
  }
}

/** One call of the handler for `wire` requests (one model batch). */
async function runGroup(wire: WireRequest[]): Promise<WireResponse[]> {
  const requests = wire.map((r) => toHandlerRequest(r, decodeInput));
  const ctx = new HandlerContext(model!, requests, (index, body, head) => {
    checkSize(body, 'streamed chunk');
    send({ kind: MessageKind.Chunk, msg: { id: wire[index].id, head, body } });
  });
  wire.forEach((r, index) => running.set(r.id, { ctx, index }));
  let results: unknown[];
  try {
    results = await handler!.handle(requests, ctx);
  } catch (err) {
    const error = asError(err);
    results = requests.map(() => error);
  } finally {
    for (const r of wire) running.delete(r.id);
  }
  return wire.map((r, i) => toResponse(r.id, results[i], ctx, i));
}

function toResponse(id: number, result: unknown, ctx: HandlerContext, index: number): WireResponse {
  const slot = ctx.responses[index];
  if (result instanceof Error) {
    const error = requestError(result);
    return { id, status: error.status, contentType: 'application/json', headers: slot.headers, error: error.toWire() };
  }
  try {
    const body = toBuffer(result);
    checkSize(body, 'response');
    const contentType = slot.contentType || (typeof result === 'string' || Buffer.isBuffer(result) ? 'application/octet-stream' : 'application/json');
    return { id, status: slot.status, contentType, headers: slot.headers, body };
  } catch (err) {
    const error = isMmeError(err) ? err : new MmeError('MME_ERR_MODEL_ERROR', `the handler's result could not be serialised: ${(err as Error).message}`);
    return { id, status: error.status, contentType: 'application/json', headers: {}, error: error.toWire() };
  }
}

/**
 * Checked here, before sending, so that an oversized answer fails its own request alone: the
 * server's frame limit is then never what stops it.
 */
function checkSize(body: Buffer, what: string): void {
  if (body.length > maxResponseSize) {
    throw new MmeError('MME_ERR_RESPONSE_TOO_LARGE', `The ${what} of model ${model!.modelName} is ${body.length} bytes, over max_response_size (${maxResponseSize}); raise max_response_size or return less data.`);
  }
}

/** What a handler threw, as an Error: a thrown string or object fails its requests too, never becomes a result. */
function asError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  const o = typeof thrown === 'object' && thrown !== null ? (thrown as { message?: unknown; status?: unknown }) : null;
  const error = new Error(o?.message !== undefined ? String(o.message) : typeof thrown === 'string' ? thrown : `threw ${JSON.stringify(thrown) ?? String(thrown)}`);
  return o?.status === undefined ? error : Object.assign(error, { status: o.status });
}

/** A handler-raised status is kept; memory errors are 507; anything else is 500 with its message. */
function requestError(err: Error): MmeError {
  if (isMmeError(err)) return err;
  const status = Number((err as { status?: unknown; statusCode?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode);
  if (Number.isInteger(status) && status >= 400 && status <= 599) return new MmeError('MME_ERR_MODEL_ERROR', err.message, { status });
  if (looksLikeOutOfMemory(err.message) || err instanceof RangeError && /allocation|memory/i.test(err.message)) {
    return new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `the model ran out of memory: ${err.message}`);
  }
  return new MmeError('MME_ERR_MODEL_ERROR', `the model's handler failed: ${err.message}`);
}
