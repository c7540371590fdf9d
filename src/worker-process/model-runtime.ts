/** One model inside a worker process (a shared host holds one per slot): its session, handler, and batches. */
import { performance } from 'node:perf_hooks';
import { invalidModel, isMmeError, MmeError, shortageError, type WireError } from '../errors';
import type {
  InferMessage,
  LoadedMessage,
  LoadMessage,
  ResultMessage,
  InvokeRequest,
  WireResponse,
} from '../protocol/messages';
import type { BodyRingReader } from './body-ring-reader';
import { HandlerContext, toBuffer, type ModelInfo, type SendChunk } from './context';
import { loadHandler, unloadHandler, type Handler } from './handler';
import { toHandlerRequest } from './handler-request';
import { RunClock, type FairTurns } from './run-clock';
import { openSession } from './session';

/** Where a running request's context is found by id, so a Cancel or ChunkAck frame can reach its handler. */
export type RunningRequests = Map<number, { ctx: HandlerContext; index: number }>;

export interface RuntimeIo {
  result(msg: ResultMessage): void;
  chunk(id: number, body: Buffer, head: Parameters<SendChunk>[2]): void;
  running: RunningRequests;
  log(line: string): void;
  /** A shared host's: its models' session runs take turns (run-clock.ts). */
  turns: FairTurns | null;
  /** The process's body ring, where the server puts large request bodies; null = they come in the frames. */
  bodies: BodyRingReader | null;
}

export class ModelRuntime {
  private constructor(
    readonly load: LoadMessage,
    private readonly handler: Handler,
    private readonly model: ModelInfo,
    private readonly clock: RunClock,
    private readonly io: RuntimeIo,
  ) {}

  static async open(
    msg: LoadMessage,
    io: RuntimeIo,
  ): Promise<{ runtime: ModelRuntime; loaded: Omit<LoadedMessage, 'slot' | 'pid' | 'rssGrowthBytes'> }> {
    const t0 = performance.now();
    const { session, ...described } = await openSession(msg, (line) => io.log(line));
    const sessionMicros = Math.round((performance.now() - t0) * 1000);
    const clock = new RunClock();
    // Only a shared host's models share a thread: a dedicated worker's runs go straight to onnxruntime.
    if (io.turns) clock.watch(session, io.turns);
    let handler: Handler;
    try {
      handler = loadHandler(msg.handlerPath, msg.modelDir);
      const model: ModelInfo = {
        modelName: msg.modelName,
        modelDir: msg.modelDir,
        gpuId: msg.gpuId,
        // The parent sends a streaming handler one request per batch, whatever batch_size says.
        batchSize: handler.streaming ? 1 : msg.batchSize,
        session,
        inputs: described.inputs,
        outputs: described.outputs,
        streaming: handler.streaming,
        maxStreamBuffer: msg.maxStreamBuffer,
        maxRequestElements: msg.maxRequestElements,
      };
      await handler.initialize(new HandlerContext(model, [], () => undefined));
      return {
        runtime: new ModelRuntime(msg, handler, model, clock, io),
        loaded: {
          ...described,
          loadMicros: Math.round((performance.now() - t0) * 1000),
          sessionMicros,
          streaming: handler.streaming,
        },
      };
    } catch (err) {
      // A shared host goes on serving other models: a failed load must not keep the session.
      await session.release().catch(() => undefined);
      if (msg.handlerPath) unloadHandler(msg.handlerPath, msg.modelDir);
      throw err;
    }
  }

  /** Forgets the handler module too, so a later load of it starts fresh. */
  async release(): Promise<void> {
    await this.model.session.release();
    if (this.load.handlerPath) unloadHandler(this.load.handlerPath, this.load.modelDir);
  }

  async runBatch(batch: InferMessage): Promise<void> {
    // A request whose body cannot be had from the ring fails alone; the rest of its batch runs.
    const refused: WireResponse[] = [];
    // Bodies read from the ring that nothing keeps once answered: the default handler's (a custom one may keep them).
    const recycled: Buffer[] = [];
    const requests = batch.requests.filter((r) => {
      try {
        if (this.#fetchBody(r) && this.load.handlerPath === null) recycled.push(r.body as Buffer);
        return true;
      } catch (err) {
        refused.push(errorAnswer(r.id, isMmeError(err) ? err : new MmeError('MME_ERR_INTERNAL', asError(err).message)));
        return false;
      }
    });
    if (refused.length > 0)
      this.io.result({ batchId: batch.batchId, modelMicros: 0, runMicros: this.clock.micros, responses: refused });
    // Independent requests travel together only to save round trips: each runs as its own batch of
    // one, and its answer leaves the moment it is ready. Holding it for the next would be a bet on
    // how long that one runs, and a next request that blocks would keep it forever.
    const groups = batch.independent ? requests.map((r) => [r]) : requests.length > 0 ? [requests] : [];
    for (const group of groups) {
      const t0 = performance.now();
      const responses = await this.#runGroup(group);
      this.io.result({
        batchId: batch.batchId,
        modelMicros: Math.round((performance.now() - t0) * 1000),
        runMicros: this.clock.micros,
        responses,
      });
    }
    for (const body of recycled) this.io.bodies!.recycle(body);
  }

  #fetchBody(r: InvokeRequest): boolean {
    if (!r.ring) return false;
    if (!this.io.bodies)
      throw new MmeError('MME_ERR_INTERNAL', `request ${r.id}'s body is in a body ring this worker was not given`);
    return this.io.bodies.fetch(r);
  }

  async #runGroup(wire: InvokeRequest[]): Promise<WireResponse[]> {
    const requests = wire.map((r) => toHandlerRequest(r, this.load.decodeInputRequest));
    const ctx = new HandlerContext(this.model, requests, (index, body, head) => {
      this.#checkSize(body, 'streamed chunk');
      this.io.chunk(wire[index].id, body, head);
    });
    const { running } = this.io;
    wire.forEach((r, index) => running.set(r.id, { ctx, index }));
    let results: unknown[];
    try {
      results = await this.handler.handle(requests, ctx);
    } catch (err) {
      const error = asError(err);
      results = requests.map(() => error);
    } finally {
      for (const r of wire) running.delete(r.id);
    }
    return wire.map((r, i) => this.#toResponse(r.id, results[i], ctx, i));
  }

  #toResponse(id: number, result: unknown, ctx: HandlerContext, index: number): WireResponse {
    const slot = ctx.responses[index];
    try {
      // Inside the try: instanceof itself throws for a Proxy whose getPrototypeOf trap does.
      if (result instanceof Error) return errorAnswer(id, requestError(asError(result)), slot.headers);
      const body = toBuffer(result);
      this.#checkSize(body, 'response');
      const contentType =
        slot.contentType ||
        (typeof result === 'string' || Buffer.isBuffer(result) ? 'application/octet-stream' : 'application/json');
      return { id, status: slot.status, contentType, headers: slot.headers, body };
    } catch (err) {
      return errorAnswer(
        id,
        isMmeError(err)
          ? err
          : new MmeError(
              'MME_ERR_MODEL_ERROR',
              `the handler's result could not be serialised: ${asError(err).message}`,
            ),
      );
    }
  }

  /** Checked before sending, so an oversized answer fails its own request alone, never the server's frame limit. */
  #checkSize(body: Buffer, what: string): void {
    const limit = this.load.maxResponseSize;
    if (body.length > limit) {
      throw new MmeError(
        'MME_ERR_RESPONSE_TOO_LARGE',
        `The ${what} of model ${this.load.modelName} is ${body.length} bytes, over max_response_size (${limit}); raise max_response_size or return less data.`,
      );
    }
  }
}

function errorAnswer(id: number, error: MmeError, headers: Record<string, string> = {}): WireResponse {
  return { id, status: error.status, contentType: 'application/json', headers, error: error.toWire() };
}

/** What a failed load reports: memory or space errors are 507, anything onnxruntime cannot parse or run is a bad artifact (400). */
export function loadError(err: unknown): WireError {
  const error = asError(err);
  if (isMmeError(error)) return error.toWire();
  const { message } = error;
  return (
    shortageError(message, 'loading the model', error instanceof RangeError) ??
    invalidModel(`the model could not be loaded: ${message}`)
  ).toWire();
}

/**
 * What a handler threw (or returned as an Error), as a fresh Error holding only a string message
 * and a numeric status: a thrown string or object fails its requests too, never becomes a result.
 * Describing it cannot throw, whatever it is (a circular object, a BigInt, a Proxy, getters or a
 * toString that throw): an exception here would be an unhandled rejection that ends the process,
 * and with it every model a shared host holds. MmeError bounds the message's length.
 */
function asError(thrown: unknown): Error {
  try {
    if (isMmeError(thrown)) return thrown;
    const o =
      typeof thrown === 'object' && thrown !== null
        ? (thrown as { message?: unknown; status?: unknown; statusCode?: unknown })
        : null;
    const message =
      o !== null && o.message !== undefined
        ? describeThrown(o.message)
        : typeof thrown === 'string'
          ? thrown
          : thrown instanceof Error
            ? ''
            : `threw ${describeThrown(thrown)}`;
    const error = thrown instanceof RangeError ? new RangeError(message) : new Error(message);
    const raw = o?.status ?? o?.statusCode;
    const status = typeof raw === 'number' ? raw : typeof raw === 'string' ? Number(raw) : NaN;
    return Number.isNaN(status) ? error : Object.assign(error, { status });
  } catch {
    return new Error('threw a value that could not be described');
  }
}

/** A thrown value as text; may throw (a Proxy, a throwing toString), which asError catches. */
function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'symbol') return value.toString();
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return json;
  } catch {
    return 'an object JSON cannot show (circular, or holding a BigInt)';
  }
  return String(value);
}

/**
 * A handler-raised status is kept: a 4xx is the client's mistake (MME_ERR_INVALID_INPUT, as the
 * server's own input errors), a 5xx the model's; memory errors are 507; anything else is 500.
 */
function requestError(err: Error): MmeError {
  if (isMmeError(err)) return err;
  // asError has read statusCode into status.
  const status = Number((err as { status?: unknown }).status);
  if (Number.isInteger(status) && status >= 400 && status <= 599)
    return new MmeError(status < 500 ? 'MME_ERR_INVALID_INPUT' : 'MME_ERR_MODEL_ERROR', err.message, { status });
  const allocation = err instanceof RangeError && /allocation|memory/i.test(err.message);
  return (
    shortageError(err.message, 'the model', allocation) ??
    new MmeError('MME_ERR_MODEL_ERROR', `the model's handler failed: ${err.message}`)
  );
}
