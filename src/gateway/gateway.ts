/**
 * The one way to a model for every invoke, whichever door it came through: guards, target,
 * deadline and priority, run, metric, trace and error line. KServe's counterpart is its DataPlane
 * (kserve/protocol/dataplane.py), which its REST and gRPC servers share.
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

/** A client's request for a model, as the model's handler reads it (context.requests[i]). */
export interface ModelRequest {
  /** The x-request-id the client got back: handlers log it, so a request can be followed across processes. */
  requestId: string;
  contentType: string;
  accept: string;
  /** The client's headers, lower-case names; a worker gets them only for a custom handler, which may read them. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** One buffer, or the pieces the client's socket delivered: they go to the worker back to back, never joined here. */
  body: Buffer | readonly Buffer[];
  stream?: boolean;
}

export type ModelAnswer = InvokeResult;

/** A request aborted alone (one of a gRPC stream's) brings its signal; else the invocation is its own. */
export type RunOptions = Pick<JobOptions, 'signal' | 'onChunk'>;

/** OIP's parameters.timeout (microseconds, as Triton) and .priority. */
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
  controls?: ControlLimits;
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

  /** During shutdown every request is 503: a 404 would tell SageMaker the model is gone from this host. */
  admit(): void {
    if (this.opts.manager.closing)
      throw new MmeError('MME_ERR_SHUTTING_DOWN', 'The server is shutting down; send the request to another instance.');
  }

  door(opts: DoorGuardOptions): DoorGuard {
    return new DoorGuard(() => this.admit(), opts);
  }

  accept(accept: string | undefined): string {
    return !accept || accept.trim() === '*/*' ? this.opts.defaultAccept : accept;
  }

  /** A gRPC stream's requests share one request id. */
  invocation(requestId = newRequestId()): Invocation {
    return new Invocation(this.opts, requestId);
  }

  failure(err: unknown, requestId: string | undefined, where: string, shown?: (e: MmeError) => string): MmeError {
    const e = asMmeError(err, this.opts.log);
    this.opts.log(errorLine(requestId, where, shown ? shown(e) : e.status, e));
    return e;
  }
}

/**
 * One request for a model, timed from its door to its answer. It counts in the invocation metric
 * once claimed for a name (target()): requests refused before that are no invocations.
 */
export class Invocation implements ClientSignal {
  readonly #t0 = performance.now();
  aborted = false;
  onabort: ClientSignal['onabort'] = null;
  /** The metric's model: '' for a name the server does not know (client text, unbounded: never a dimension). */
  #model: string | undefined;
  #result: InvokeResult | undefined;
  #status: number | undefined;
  #deadline: number | undefined;
  #priority: number | undefined;
  /** Made only when tracing. */
  #trace: ({ runStart: number; runEnd: number } & Pick<InvocationTrace, 'traceparent' | 'tracestate'>) | null = null;

  constructor(
    private readonly opts: GatewayOptions,
    readonly requestId: string,
  ) {}

  /** A 404 for an unknown name comes before any body is read. */
  target(name: string): void {
    const known = this.opts.manager.knows(name);
    this.#model = known ? name : '';
    if (!known) throw modelNotFound(name);
  }

  /** With several timeouts (a gRPC deadline and parameters.timeout) the soonest holds. */
  askTimeout(value: unknown, where: string, unit: TimeUnit = MILLISECONDS): void {
    const ms = requestTimeoutMs(value, unit, where, this.opts.controls ?? kNoControls);
    if (ms !== null) this.deadlineIn(ms);
  }

  deadlineIn(ms: number): void {
    const max = this.opts.controls?.maxRequestTimeoutMs || ms;
    const at = (this.opts.clock ?? realClock).now() + Math.min(ms, max);
    if (this.#deadline === undefined || at < this.#deadline) this.#deadline = at;
  }

  askPriority(value: unknown, where: string): void {
    this.#priority = requestPriority(value, where, this.opts.controls ?? kNoControls);
  }

  /** OIP's priority wins over a transport's own. */
  askOip(asked: OipParameters): void {
    if (asked.timeout !== undefined) this.askTimeout(asked.timeout, 'parameters.timeout', MICROSECONDS);
    if (asked.priority !== undefined) this.askPriority(asked.priority, 'parameters.priority');
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.onabort?.(new Event('abort'));
  }

  /** Read before the guards, so that a refused request still joins its caller's trace. */
  traceFrom(headers: Readonly<Record<string, string | string[] | undefined>>): void {
    if (this.opts.tracer) this.#trace = { runStart: 0, runEnd: 0, ...traceContext(headers) };
  }

  /** Decides the status finish() records: the model's, its failure's, or 499 once the client went away. */
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

  /** Counts a claimed invocation once, with the run's status or `refused`'s when it failed before running. */
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
