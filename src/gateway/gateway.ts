/**
 * The one way to a model for every request, whichever door it came through: guard, target,
 * deadline and priority, run, metric, trace and error line, in handle(). A door only decodes its
 * wire into a DoorRequest (door.ts) and encodes what it is given back. KServe's counterpart is its
 * DataPlane (kserve/protocol/dataplane.py), which its REST and gRPC servers share.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { MmeError, isMmeError } from '../errors';
import type { MetricsRecorder } from '../metrics';
import { OIP_MEDIA_TYPE, oipContentType } from '../oip/binary-body';
import type { InvokeRequest } from '../protocol/messages';
import type { InvokeResult, JobOptions } from '../server/jobs/job';
import type { OnDemandLoader } from '../server/models/on-demand';
import { modelNotFound } from '../server/models/model-names';
import { realClock, type Clock } from '../util/clock';
import { DoorGuard, type DoorGuardOptions, type DoorRequest, type ModelAnswer } from './door';
import { oipControls } from './oip/infer-request';
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

export interface GatewayOptions {
  models: Pick<OnDemandLoader, 'knows' | 'invoke'>;
  /** During shutdown every request is 503 (DoorGuard). */
  server: { readonly closing: boolean };
  metrics: Pick<MetricsRecorder, 'invocation'>;
  log: (line: string) => void;
  /** What a request that accepts anything gets: SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT, as in SageMaker's inference toolkit. */
  defaultAccept: string;
  controls?: ControlLimits;
  clock?: Clock;
  /** null = tracing off (otel_traces_sampler_ratio 0): a request then notes nothing for it. */
  tracer?: RequestTracer | null;
}

/** MMS's request id: a UUID, answered as x-request-id, logged with every error, handed to the handler. */
export function newRequestId(): string {
  return randomUUID();
}

export class Gateway {
  constructor(private readonly opts: GatewayOptions) {}

  door(opts: DoorGuardOptions): DoorGuard {
    return new DoorGuard(this.opts.server, opts);
  }

  /** Answers `request` once, with its model's answer or its failure; never rejects but for a fault of its door's. */
  async handle(request: DoorRequest): Promise<void> {
    const inv = new Invocation(this.opts, request);
    let answer: ModelAnswer | null = null;
    let failure: unknown;
    try {
      request.guard.check(request.knock);
      const name = request.target();
      if (name !== null) answer = await inv.run(name);
    } catch (err) {
      failure = err;
    }
    inv.finish(failure);
    if (failure === undefined) {
      try {
        request.answer(answer);
        return;
      } catch (err) {
        failure = err;
      }
    }
    this.failure(failure, request.requestId, request.where, (e) => request.fail(e));
  }

  /**
   * Logs a failure (with the request id; `where` names the call without client text) and gives it
   * as the client gets it; `shown` answers it and says what the client saw. 4xx messages may echo
   * what the client sent, so the message is logged for server faults only.
   */
  failure(err: unknown, requestId: string | undefined, where: string, shown?: (e: MmeError) => string | number) {
    const { log } = this.opts;
    // Anything unexpected is logged whole and becomes a generic 500.
    if (!isMmeError(err)) log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
    const e = isMmeError(err)
      ? err
      : new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
    log(
      `request ${requestId ?? '-'} ${where}: ${shown ? shown(e) : e.status} ${e.code}${e.status >= 500 ? ` ${e.message}` : ''}`,
    );
    return e;
  }
}

/**
 * One request, timed from its door to its answer. It counts in the invocation metric once it
 * named a model (run()); one refused before that is no invocation, but is traced.
 */
class Invocation {
  readonly #t0 = performance.now();
  /** The metric's model: '' for a name the server does not know (client text, unbounded: never a dimension). */
  #model: string | undefined;
  #result: InvokeResult | undefined;
  #status: number | undefined;
  #deadline: number | undefined;
  #priority: number | undefined;
  /** Made only when tracing. */
  readonly #trace: ({ runStart: number; runEnd: number } & Pick<InvocationTrace, 'traceparent' | 'tracestate'>) | null;

  constructor(
    private readonly opts: GatewayOptions,
    private readonly request: DoorRequest,
  ) {
    this.#trace = opts.tracer ? { runStart: 0, runEnd: 0, ...traceContext(request.headers) } : null;
  }

  /** A 404 or a bad control comes before any body is read. Decides the status finish() records. */
  async run(name: string): Promise<ModelAnswer> {
    const { request, opts } = this;
    const known = opts.models.knows(name);
    this.#model = known ? name : '';
    if (!known) throw modelNotFound(name);
    this.#ask(request, ['X-Request-Timeout', 'X-Request-Priority'], MILLISECONDS);
    if (request.deadlineMs !== undefined) this.#deadlineIn(request.deadlineMs);
    const payload = await request.body();
    let frame: InvokeRequest;
    let onChunk: JobOptions['onChunk'];
    const { requestId } = request;
    const oip = 'oipHeaderLength' in payload;
    // OIP's priority wins over a transport's own; with two deadlines the soonest holds.
    const asked = oip ? oipControls(payload.body, payload.oipHeaderLength) : (payload.oipControls ?? {});
    this.#ask(asked, ['parameters.timeout', 'parameters.priority'], MICROSECONDS);
    if (oip) {
      const { headers, body, oipHeaderLength } = payload;
      frame = { id: 0, requestId, headers, body, contentType: oipContentType(oipHeaderLength), accept: OIP_MEDIA_TYPE };
    } else {
      const { headers, body, contentType, stream } = payload;
      const accept = !payload.accept || payload.accept.trim() === '*/*' ? opts.defaultAccept : payload.accept;
      frame = { id: 0, requestId, headers, body, contentType, accept, stream };
      if (request.onChunk) onChunk = (chunk, delivered) => request.onChunk!(chunk, delivered);
    }
    const signal = request.signal;
    const job: JobOptions = { onChunk, signal, deadline: this.#deadline, priority: this.#priority };
    if (this.#trace) this.#trace.runStart = performance.now();
    try {
      this.#result = await opts.models.invoke(name, frame, job);
    } catch (err) {
      this.#status = signal.aborted ? 499 : isMmeError(err) ? err.status : 500;
      throw err;
    }
    if (this.#trace) this.#trace.runEnd = performance.now();
    this.#status = this.#result.status;
    return this.#result;
  }

  /** A deadline and a priority the caller set, each where `names` says (a header, an OIP parameter). */
  #ask(asked: { timeout?: unknown; priority?: unknown }, names: [string, string], unit: TimeUnit): void {
    const limits = this.opts.controls ?? kNoControls;
    const ms = asked.timeout === undefined ? null : requestTimeoutMs(asked.timeout, unit, names[0], limits);
    if (ms !== null) this.#deadlineIn(ms);
    if (asked.priority !== undefined) this.#priority = requestPriority(asked.priority, names[1], limits);
  }

  #deadlineIn(ms: number): void {
    const max = this.opts.controls?.maxRequestTimeoutMs || ms;
    const at = (this.opts.clock ?? realClock).now() + Math.min(ms, max);
    if (this.#deadline === undefined || at < this.#deadline) this.#deadline = at;
  }

  /** Counts the invocation with the run's status, or `failure`'s when it failed before running. */
  finish(failure: unknown): void {
    const status = this.#status ?? (failure === undefined ? 200 : isMmeError(failure) ? failure.status : 500);
    const model = this.#model;
    const trace = this.#trace;
    // Refused before it named a model (a guard's 401, 403, 431, 503, a 405): never counted, but
    // traced in its caller's trace.
    if (model === undefined && (trace === null || status < 400)) return;
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
    // Tracing: its trace context was read when it came.
    if (trace)
      this.opts.tracer!.record({
        ...trace,
        requestId: this.request.requestId,
        model: model ?? '',
        status,
        start: this.#t0,
        end,
        result: r,
      });
  }
}
