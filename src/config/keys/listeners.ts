/** Listeners and requests: where the APIs listen and what one request may be. */
import { timerLimit } from '../../util/timer-limit';
import { address, atLeast, between, bodyBytes, bool, duration, int, num, seconds, str, type KeySpec } from './kinds';

export const kListenerKeys = {
  inference_address: address('http://127.0.0.1:8080', {
    field: null,
    doc: 'Where the inference API (/ping, /invocations, /models/{name}/invoke) listens: http://host:port, https://host[:port] or unix:/path. SageMaker needs http://0.0.0.0:8080 (SAGEMAKER_BIND_TO_PORT replaces the port).',
  }),
  management_address: address('http://127.0.0.1:8081', {
    field: null,
    doc: 'Where the management API (POST/GET/DELETE /models) listens. Set it equal to inference_address to serve both APIs on one port, as the SageMaker MME contract requires.',
  }),
  max_connections: int('1024', atLeast(1), {
    doc: 'Most open client connections per listener, the gRPC one included; more are refused at once, which bounds file descriptors and memory.',
  }),
  grpc_inference_address: str('127.0.0.1', '0.0.0.0', {
    doc: 'Host the gRPC inference listener (KServe GRPCInferenceService and TorchServe InferenceAPIsService, one port) binds to when grpc_inference_port is set. A loopback host serves only calls whose :authority is a loopback name; set 0.0.0.0 to serve other hosts.',
  }),
  grpc_inference_port: int(null, between(0, 65535), {
    example: '7070',
    doc: 'Port of the gRPC inference listener (TorchServe uses 7070; 0 = any free port); unset = no gRPC listener. max_request_size bounds each request message.',
  }),
  max_request_size: int('6553500', bodyBytes, {
    field: null,
    doc: 'Largest request body in bytes (larger gets 413), at most 1 GiB. SAGEMAKER_MAX_PAYLOAD_IN_MB overrides it.',
  }),
  max_request_elements: int('8388608', atLeast(1), {
    doc: 'Most tensor elements one request may decode into, over all its inputs (more gets 400, before any tensor is allocated). Every element also needs at least one byte of body, so the default binds only once max_request_size is raised above 8 MiB.',
  }),
  max_response_size: int('6553500', bodyBytes, {
    doc: 'Largest response a worker may return, in bytes (larger fails the request with 500), at most 1 GiB.',
  }),
  max_stream_buffer: int('8388608', atLeast(65536), {
    doc: 'Bytes of one streamed response that may be on their way to a slow client. A streaming handler awaits context.drained(i) between chunks to wait for it; one that sends past it fails that request with a message saying so.',
  }),
  decode_input_request: bool('true', {
    doc: 'true = handlers get application/json bodies parsed and text/* bodies as strings; false = raw bytes (what the SageMaker MMS configs use).',
  }),
  default_response_timeout: int('120', duration(1, 60_000, 'minutes'), {
    field: null,
    doc: 'MMS-compatible request deadline in MINUTES (an MMS quirk: 120 = 7200 s). Applies only when written in the file or env and default_response_timeout_seconds is unset; prefer default_response_timeout_seconds.',
  }),
  default_response_timeout_seconds: num(
    '-1',
    {
      allows: (n) => n !== 0 && n <= timerLimit(1000, '').max,
      text: `> 0 and <= ${timerLimit(1000, 'seconds').text}, or negative for unset`,
    },
    {
      example: '60',
      field: null,
      doc: "Request deadline in seconds (preferred over default_response_timeout, which it overrides when set); negative = unset, as MMS's -1. With neither key set the deadline is 60 s, SageMaker's own invoke limit.",
    },
  ),
  max_request_timeout: num('0', seconds(0), {
    field: 'maxRequestTimeoutSeconds',
    doc: "Longest deadline in SECONDS a caller may ask for (X-Request-Timeout, OIP parameters.timeout, gRPC grpc-timeout): a longer one is cut to it. 0 = no cap but the model's response timeout, which bounds every request.",
  }),
  priority_levels: int('1', between(1, 32), {
    doc: "Priority levels a caller may choose from (OIP parameters.priority, X-Request-Priority, as Triton's: 1 goes first, 0 or none = the middle level, ceil(levels / 2)); values outside are 400. 1 = off: every model's queue is first in, first out.",
  }),
  priority_aging_ms: int('1000', duration(1, 1, 'milliseconds'), {
    doc: 'Milliseconds of waiting that raise a queued request by one priority level, so that low priority never starves: a request is never passed by one that arrived (its level + 1) × priority_aging_ms after it.',
  }),
  shutdown_timeout: num('20', seconds(0), {
    field: 'shutdownTimeoutSeconds',
    doc: 'On SIGTERM, seconds to let admitted requests finish before every worker is stopped; SageMaker sends SIGKILL 30 s after SIGTERM.',
  }),
} as const satisfies Record<string, KeySpec>;
