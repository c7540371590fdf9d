/**
 * The one way to a model for every invoke, whichever door it came through (the HTTP invoke routes,
 * gRPC's ModelInfer and Predictions): the request id, the guards (door-guard.ts), the known-model
 * check, the caller's deadline and priority (its transport's and OIP's parameters), the default
 * Accept, the run through the model manager with the client's AbortSignal, the status the metric
 * and the trace record, and the error line. A door only translates: its transport's request into a
 * ModelRequest, and the ModelAnswer or MmeError back into its transport's answer. KServe's
 * counterpart is its DataPlane (kserve/protocol/dataplane.py), which its REST and gRPC servers share.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { MmeError, isMmeError } from '../errors';
import type { MetricsRecorder } from '../metrics';
import type { ClientSignal, InvokeResult, JobOptions } from '../server/jobs/job';
import type { ModelManager } from '../server/models/model-manager';
import { modelNotFound } from '../server/models/model-names';
import { realClock, type Clock } from '../util/clock';
import { DoorGuard, type DoorGuardOptions } from './door-guard';
import { asMmeError, errorLine } from './error-line';
import {
  kNoControls,
  MICROSECONDS,
  MILLISECONDS,
  requestPriority,
  requestTimeoutMs,
  type ControlLimits,
  type TimeUnit,
} from './request-controls';
import { traceContext, type InvocationTrace, type RequestTracer } from './tracing';

/**
 * A client's request for a model, as both doors build it and the model's handler reads it
 * (context.requests[i]). On its way to a worker it becomes the frame's request, which adds the id
 * its job travels under.
 */
export interface ModelRequest {
  /** The x-request-id the client got back: handlers log it, so one request can be followed across processes. */
  requestId: string;
  contentType: string;
  /** The client's Accept, or the default one (Gateway.accept). */
  accept: string;
  /** The client's headers, lower-case names; a worker gets them only for a custom handler, which may read them. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** One buffer, or the pieces the client's socket delivered: they go to the worker back to back, never joined here. */
  body: Buffer | readonly Buffer[];
  /** The client takes a streamed answer (intermediate chunks). */
  stream?: boolean;
}

/** A model's answer, as a door encodes it. */
export type ModelAnswer = InvokeResult;

/**
 * How a door runs a request: a streamed answer's chunks, and the signal of a request that can be
 * aborted alone (one of a gRPC stream's); without one, the invocation is its own (abort()).
 */
export type RunOptions = Pick<JobOptions, 'signal' | 'onChunk'>;

/** OIP's parameters.timeout (microseconds, as Triton) and .priority, as a door decoded them. */
export interface OipParameters {
  timeout?: unknown;
  priority?: unknown;
}

export interface GatewayOptions {
  manager: Pick<ModelManager, 'knows' | 'invoke' | 'closing'>;
  metrics: Pick<MetricsRecorder, 'invocation'>;
  log: (line: string) => void;
  /** What a request that accepts anything gets: SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT, as in SageMaker's inference toolkit. */
  defaultAccept: string;
  /** max_request_timeout and priority_levels; none by default. */
  controls?: ControlLimits;
  /** The model manager's clock, which a caller's deadline is set on. */
  clock?: Clock;
  /** null = tracing off (otel_traces_sampler_ratio 0): an invocation then notes nothing for it. */
  tracer?: RequestTracer | null;
}

/** MMS's request id: a UUID, answered as x-request-id, logged with every error, handed to the handler. */
export function newRequestId(): string {
  return randomUUID();
}

export class Gateway {
  constructor(private readonly opts: GatewayOptions) {}

  /**
   * During shutdown every request is 503 while admitted ones finish: a 404 would tell SageMaker the
   * model is gone from this host.
   */
  admit(): void {
    if (this.opts.manager.closing)
      throw new MmeError('MME_ERR_SHUTTING_DOWN', 'The server is shutting down; send the request to another instance.');
  }

  /** The guard of one listener (`opts`) of a door. */
  door(opts: DoorGuardOptions): DoorGuard {
    return new DoorGuard(() => this.admit(), opts);
  }

  /** The Accept a handler sees: the client's, or the default when the client accepts anything. */
  accept(accept: string | undefined): string {
    return !accept || accept.trim() === '*/*' ? this.opts.defaultAccept : accept;
  }

  /** An invocation timed from now; a door's several requests may share one request id (a gRPC stream's). */
  invocation(requestId = newRequestId()): Invocation {
    return new Invocation(this.opts, requestId);
  }

  /** `err` as the MmeError a client gets for request `requestId`, logged (errorLine). */
  failure(err: unknown, requestId: string | undefined, where: string, shown?: (e: MmeError) => string): MmeError {
    const e = asMmeError(err, this.opts.log);
    this.opts.log(errorLine(requestId, where, shown ? shown(e) : e.status, e));
    return e;
  }
}

/**
 * One request for a model, timed from the moment its door took it to the answer the client got.
 * It counts in the invocation metric once a door claimed it for a name (target()): requests refused
 * before that (a guard, a route without a model, a wrong version) are no invocations.
 */
export class Invocation implements ClientSignal {
  readonly #t0 = performance.now();
  /** Its client went away (abort()): queued, it leaves the queue; running, its handler is told. */
  aborted = false;
  onabort: ClientSignal['onabort'] = null;
  /** The metric's model: '' for a name the server does not know (client text, unbounded: never a dimension). */
  #model: string | undefined;
  #result: InvokeResult | undefined;
  /** The status the run ended with: the model's, its failure's, or 499 when the client went away. */
  #status: number | undefined;
  /** The caller's deadline (the clock's now()) and priority level, when it asked for them. */
  #deadline: number | undefined;
  #priority: number | undefined;
  /** Made only when tracing: when the run began and ended, and the caller's trace context. */
  #trace: ({ runStart: number; runEnd: number } & Pick<InvocationTrace, 'traceparent' | 'tracestate'>) | null = null;

  constructor(
    private readonly opts: GatewayOptions,
    readonly requestId: string,
  ) {}

  /** Claims the invocation for `name`: 404 for a name the server does not know, before any body is read. */
  target(name: string): void {
    const known = this.opts.manager.knows(name);
    this.#model = known ? name : '';
    if (!known) throw modelNotFound(name);
  }

  /**
   * The caller's timeout `value` as its door reads it (a 400 when it is no whole number), from now;
   * with several (a gRPC deadline and parameters.timeout) the soonest holds.
   */
  askTimeout(value: unknown, where: string, unit: TimeUnit = MILLISECONDS): void {
    const ms = requestTimeoutMs(value, unit, where, this.opts.controls ?? kNoControls);
    if (ms !== null) this.deadlineIn(ms);
  }

  /** A deadline the transport already parsed (gRPC's), `ms` from now: past already when <= 0. */
  deadlineIn(ms: number): void {
    const max = this.opts.controls?.maxRequestTimeoutMs || ms;
    const at = (this.opts.clock ?? realClock).now() + Math.min(ms, max);
    if (this.#deadline === undefined || at < this.#deadline) this.#deadline = at;
  }

  /** The caller's priority as its door reads it: a 400 outside priority_levels; the last one asked holds. */
  askPriority(value: unknown, where: string): void {
    this.#priority = requestPriority(value, where, this.opts.controls ?? kNoControls);
  }

  /** OIP's parameters, which win over a transport's own (the shorter timeout holds). */
  askOip(asked: OipParameters): void {
    if (asked.timeout !== undefined) this.askTimeout(asked.timeout, 'parameters.timeout', MICROSECONDS);
    if (asked.priority !== undefined) this.askPriority(asked.priority, 'parameters.priority');
  }

  /** The client went away before its answer was out. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.onabort?.(new Event('abort'));
  }

  /**
   * The caller's W3C trace context, read as soon as the door has the request's headers, so that a
   * request refused before it runs (by a guard, for an unknown model, for its body) still joins its
   * caller's trace. Nothing is kept when tracing is off.
   */
  traceFrom(headers: Readonly<Record<string, string | string[] | undefined>>): void {
    if (this.opts.tracer) this.#trace = { runStart: 0, runEnd: 0, ...traceContext(headers) };
  }

  /**
   * Runs `request` on the claimed model; the model counts as busy (a drain waits for it) until it
   * answers. The status finish() records is decided here: the model's, or its failure's (499 once
   * the client went away).
   */
  async run(request: ModelRequest, run: RunOptions): Promise<ModelAnswer> {
    const signal = run.signal ?? this;
    const opts: JobOptions = { onChunk: run.onChunk, signal, deadline: this.#deadline, priority: this.#priority };
    if (this.opts.tracer) this.#trace = { runStart: performance.now(), runEnd: 0, ...traceContext(request.headers) };
    try {
      this.#result = await this.opts.manager.invoke(this.#model!, { id: 0, ...request }, opts);
    } catch (err) {
      this.#status = signal.aborted ? 499 : isMmeError(err) ? err.status : 500;
      throw err;
    }
    if (this.#trace) this.#trace.runEnd = performance.now();
    this.#status = this.#result.status;
    return this.#result;
  }

  /**
   * Counts a claimed invocation, once, with the status the client got as an HTTP status: the run's,
   * or `refused`'s when it failed before it ran.
   */
  finish(refused?: unknown): void {
    const status = this.#status ?? (refused === undefined ? 200 : isMmeError(refused) ? refused.status : 500);
    const model = this.#model;
    const trace = this.#trace;
    // Refused before it named a model (a guard's 401, 403, 413, 503): never counted, but traced
    // when its door read the caller's trace context (traceFrom).
    if (model === undefined && (trace === null || status < 400)) return;
    this.#model = undefined;
    this.#trace = null;
    const r = this.#result;
    const end = performance.now();
    if (model !== undefined)
      this.opts.metrics.invocation({
        model,
        status,
        totalMicros: Math.round((end - this.#t0) * 1000),
        modelMicros: r?.modelMicros ?? 0,
        queueMicros: r?.queueMicros ?? 0,
        batchSize: r?.batchSize ?? 0,
        loadWaitMicros: r?.loadWaitMicros,
      });
    this.opts.tracer?.record({
      requestId: this.requestId,
      model: model ?? '',
      status,
      start: this.#t0,
      end,
      runStart: trace?.runStart ?? 0,
      runEnd: trace?.runEnd ?? 0,
      traceparent: trace?.traceparent,
      tracestate: trace?.tracestate,
      result: r,
    });
  }
}
