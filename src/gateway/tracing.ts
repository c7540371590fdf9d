/**
 * OpenTelemetry traces of the invocations: one server span a request with children for load, queue,
 * run and encode, made once the request is answered from the times noted and the worker's answer
 * frame, so no span lives while a request is in flight. The SDK is loaded at the first request
 * traced: with tracing off the server never requires it.
 */
import type { Context, Span } from '@opentelemetry/api';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { performance } from 'node:perf_hooks';
import type { InvokeResult } from '../server/jobs/job';
import type { Log } from '../logger';
import { realClock, type Clock } from '../util/clock';
import { exportUrl, ReportedExporter } from './tracing-export';

export interface TracingOptions {
  /** Share of the requests without a sampled caller that are traced: 0 < ratio <= 1. */
  readonly ratio: number;
  /** OTLP/HTTP base URL (…/v1/traces is added); null = the exporter reads the OTEL_* environment variables. */
  readonly endpoint: string | null;
  readonly log: Log;
  readonly clock?: Pick<Clock, 'now'>;
}

/** An answered request as a trace needs it; times are performance.now() milliseconds. */
export interface InvocationTrace {
  readonly requestId: string;
  /** '' for a name the server does not know (client text: never a span name). */
  readonly model: string;
  /** As an HTTP status (a gRPC call's is the one its gRPC status maps from). */
  readonly status: number;
  readonly start: number;
  readonly end: number;
  /** 0: the run never began or ended. */
  readonly runStart: number;
  readonly runEnd: number;
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  readonly result: InvokeResult | undefined;
}

export function traceContext(
  headers: Readonly<Record<string, string | string[] | undefined>> | undefined,
): Pick<InvocationTrace, 'traceparent' | 'tracestate'> {
  const traceparent = headers?.traceparent;
  const tracestate = headers?.tracestate;
  // W3C Trace Context: several tracestate headers are one list; several traceparent ones, none valid.
  return {
    traceparent: typeof traceparent === 'string' ? traceparent : undefined,
    tracestate: Array.isArray(tracestate) ? tracestate.join(',') : tracestate,
  };
}

/** Answered requests waiting for their spans (the SDK's first load, the next turn); beyond it they are not traced. */
const kMaxPending = 4096;

/** Still "development": the package asks users to copy it rather than import its incubating entry. */
const ATTR_PROCESS_PID = 'process.pid';

type Emit = (t: InvocationTrace) => void;

export class RequestTracer {
  #emit: Emit | null = null;
  #loading: Promise<void> | null = null;
  #provider: BasicTracerProvider | null = null;
  #pending: InvocationTrace[] = [];
  #draining = false;

  constructor(readonly opts: TracingOptions) {}

  /** Spans are made on a later turn: tracing adds to the server's CPU, not to the request's latency. */
  record(t: InvocationTrace): void {
    if (this.#pending.length < kMaxPending) this.#pending.push(t);
    if (this.#emit) {
      if (!this.#draining) {
        this.#draining = true;
        setImmediate(() => this.#drain());
      }
      return;
    }
    this.#loading ??= this.#load().then(
      () => this.#drain(),
      (err: unknown) => {
        this.opts.log(`tracing off: the OpenTelemetry SDK did not load: ${(err as Error)?.message ?? String(err)}`);
        this.#emit = () => {};
        this.#drain();
      },
    );
  }

  #drain(): void {
    this.#draining = false;
    const pending = this.#pending;
    this.#pending = [];
    for (const t of pending) {
      // Off the request's path, a fault here would reach nobody but the process: logged instead.
      try {
        this.#emit!(t);
      } catch (err) {
        this.opts.log(`tracing: request ${t.requestId} not traced: ${(err as Error)?.stack ?? String(err)}`);
      }
    }
  }

  async close(): Promise<void> {
    await this.#loading;
    if (this.#emit) this.#drain();
    // A flush past the exporter's concurrent-export limit (a large OTEL_BSP_MAX_QUEUE_SIZE) rejects.
    await this.#provider?.shutdown().catch((err: unknown) => {
      this.opts.log(`tracing: spans lost at shutdown: ${(err as Error)?.message ?? String(err)}`);
    });
  }

  async #load(): Promise<void> {
    const [api, core, base, resources, semconv, exporter] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/core'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/semantic-conventions'),
      import('@opentelemetry/exporter-trace-otlp-proto'),
    ]);
    const { log, ratio, endpoint } = this.opts;
    // The SDK's own warnings and errors; a failed export is ReportedExporter's to tell.
    api.diag.setLogger(
      { error: (m) => log(`tracing: ${m}`), warn: (m) => log(`tracing: ${m}`), info() {}, debug() {}, verbose() {} },
      api.DiagLogLevel.WARN,
    );
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the server's own name.
    const resource = resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: 'mme-server' }))
      .merge(resources.detectResources({ detectors: [resources.envDetector] }));
    this.#provider = new base.BasicTracerProvider({
      resource,
      // A caller's sampled flag decides for its request; the ratio decides for the others.
      sampler: new base.ParentBasedSampler({ root: new base.TraceIdRatioBasedSampler(ratio) }),
      spanProcessors: [
        new base.BatchSpanProcessor(
          new ReportedExporter(
            new exporter.OTLPTraceExporter(endpoint === null ? {} : { url: exportUrl(endpoint, process.env) }),
            exportUrl(endpoint, process.env),
            log,
            this.opts.clock ?? realClock,
          ),
        ),
      ],
    });
    const tracer = this.#provider.getTracer('mme-server');
    const propagator = new core.W3CTraceContextPropagator();
    const epoch = (t: number) => performance.timeOrigin + t;
    const child = (parent: Context, name: string, start: number): Span =>
      tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, startTime: epoch(start) }, parent);

    this.#emit = (t) => {
      const caller =
        t.traceparent === undefined
          ? api.ROOT_CONTEXT
          : propagator.extract(
              api.ROOT_CONTEXT,
              { traceparent: t.traceparent, tracestate: t.tracestate },
              api.defaultTextMapGetter,
            );
      const r = t.result;
      const span = tracer.startSpan(
        t.model ? `invoke ${t.model}` : 'invoke',
        {
          kind: api.SpanKind.SERVER,
          startTime: epoch(t.start),
          attributes: {
            'mme.model.name': t.model,
            'mme.request.id': t.requestId,
            [semconv.ATTR_HTTP_RESPONSE_STATUS_CODE]: t.status,
          },
        },
        caller,
      );
      if (!span.isRecording()) return;
      // Server spans: only the server's faults are errors (HTTP semantic conventions).
      if (t.status >= 500) {
        span.setAttribute(semconv.ATTR_ERROR_TYPE, String(t.status));
        span.setStatus({ code: api.SpanStatusCode.ERROR });
      }
      if (r && t.runEnd > 0) {
        const ctx = api.trace.setSpan(api.ROOT_CONTEXT, span);
        const loadMs = (r.loadWaitMicros ?? 0) / 1000;
        span.setAttributes({ 'mme.batch.size': r.batchSize, 'mme.model.cache_hit': r.loadWaitMicros === undefined });
        if (loadMs > 0) child(ctx, 'load', t.runStart).end(epoch(t.runStart + loadMs));
        // The queue starts once the model is there; the run ends when its answer reached this process.
        const queued = t.runStart + loadMs;
        child(ctx, 'queue', queued).end(epoch(queued + r.queueMicros / 1000));
        const run = child(ctx, 'run', Math.max(queued, t.runEnd - r.modelMicros / 1000));
        run.setAttribute('mme.batch.size', r.batchSize);
        if (r.workerPid !== undefined) run.setAttribute(ATTR_PROCESS_PID, r.workerPid);
        run.end(epoch(t.runEnd));
        child(ctx, 'encode', t.runEnd).end(epoch(t.end));
      }
      span.end(epoch(t.end));
    };
  }
}
