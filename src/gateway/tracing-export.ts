/**
 * The OTLP exporter, its failures one line a minute while the collector stays down: left to itself
 * the SDK logs each failed batch as raw JSON with a stack.
 */
import type { Log } from '../logger';
import type { Clock } from '../util/clock';

/** What an OTLP exporter reports for a batch: 0 is the SDK's ExportResultCode.SUCCESS. */
export interface ExportResult {
  code: number;
  error?: Error;
}

export interface SpanExporter<S> {
  export(spans: S[], done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

const kSuccess = 0;
export const kReportEveryMs = 60_000;

export class ReportedExporter<S> implements SpanExporter<S> {
  #unreported = 0;
  /** Spans dropped since the last export that worked; 0 while exports work. */
  #dropped = 0;
  #lastLineAt: number | null = null;

  constructor(
    private readonly inner: SpanExporter<S>,
    private readonly endpoint: string,
    private readonly log: Log,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  export(spans: S[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code === kSuccess) this.#worked();
      else this.#failed(spans.length, result.error);
      // Reported here: the span processor would hand the failure to the SDK's error handler again.
      done({ code: kSuccess });
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  #failed(spans: number, error: Error | undefined): void {
    this.#unreported += spans;
    this.#dropped += spans;
    const now = this.clock.now();
    if (this.#lastLineAt !== null && now - this.#lastLineAt < kReportEveryMs) return;
    const reason = (error?.message ?? 'no reason given').split('\n')[0].slice(0, 200);
    this.log(
      `tracing: cannot export to ${this.endpoint} (${reason}): ${this.#unreported} spans dropped${this.#lastLineAt === null ? '' : ' since the last line'}; said again at most once a minute while it lasts`,
      { level: 'warn' },
    );
    this.#lastLineAt = now;
    this.#unreported = 0;
  }

  #worked(): void {
    if (this.#dropped === 0) return;
    this.log(`tracing: export to ${this.endpoint} works again; ${this.#dropped} spans were dropped in all`, {
      level: 'info',
    });
    this.#dropped = 0;
    this.#unreported = 0;
    this.#lastLineAt = null;
  }
}

/** Where the OTLP exporter sends: the endpoint key's, else the OTEL_* variables' (the exporter's own order), else its default. */
export function exportUrl(endpoint: string | null, env: NodeJS.ProcessEnv): string {
  if (endpoint !== null) return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return 'http://localhost:4318/v1/traces';
}
