/** OpenTelemetry tracing. */
import { between, num, url, type KeySpec } from './kinds';

export const kTracingKeys = {
  otel_traces_sampler_ratio: num('0', between(0, 1), {
    example: '0.01',
    doc: "OpenTelemetry traces: the share of requests traced (0 to 1), one server span each with its queue, load, run and encode spans (docs/tracing.md). A request with a W3C traceparent follows its caller's sampling decision. 0 = off: the OpenTelemetry SDK is not even loaded.",
  }),
  otel_exporter_otlp_endpoint: url(null, 'http://otel-collector:4318', {
    doc: 'Where traces go, OTLP/HTTP protobuf: the base URL to which /v1/traces is added, as OTEL_EXPORTER_OTLP_ENDPOINT. Unset = the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT environment variable, else http://localhost:4318.',
  }),
} as const satisfies Record<string, KeySpec>;
