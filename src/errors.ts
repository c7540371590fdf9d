/**
 * Every error the server reports, in one place: a stable code (what scripts match on), the HTTP
 * status it maps to, and the MMS exception type that goes in the `type` field of the MMS error body
 * `{"code": <status>, "type": "...", "message": "..."}`. docs/api.md's error table is this table.
 */
const error = (status: number, type: string, e: { when: string }) => ({ status, type, when: e.when });

export const ERRORS = {
  MME_ERR_BAD_REQUEST: error(400, 'BadRequestException', {
    when: 'a management request is malformed: missing url or model_name, bad name, bad parameter value',
  }),
  MME_ERR_UNKNOWN_FIELD: error(400, 'BadRequestException', {
    when: 'a POST /models body has a field the load request does not know (a typo is named with a did-you-mean, and the known fields listed)',
  }),
  MME_ERR_INVALID_INPUT: error(400, 'BadRequestException', {
    when: 'an invoke body does not fit the model: bad JSON, unknown or missing input, wrong shape or element type; or a handler raised a 4xx (its status is kept)',
  }),
  MME_ERR_BODY_CHUNKS_TOO_SMALL: error(400, 'BadRequestException', {
    when: 'a chunked request body came in too many tiny chunks (past 1024 chunks, fewer than 64 bytes a chunk on average): send larger chunks or a Content-Length',
  }),
  MME_ERR_INVALID_MODEL: error(400, 'InvalidModelException', {
    when: 'the model artifact is unusable: no .onnx file, several without model.onnx, a bad archive or model-config.json, a file onnxruntime cannot load, a handler that fails to import',
  }),
  MME_ERR_UNAUTHORIZED: error(401, 'UnauthorizedException', {
    when: 'the management API (management_token) or the data plane (inference_token) needs a bearer token and the request has none or a wrong one',
  }),
  MME_ERR_FORBIDDEN: error(403, 'ForbiddenException', { when: 'the request was refused by a listener guard' }),
  MME_ERR_MODEL_NOT_FOUND: error(404, 'ModelNotFoundException', {
    when: 'the model is not loaded, or the load url does not exist',
  }),
  MME_ERR_RESOURCE_NOT_FOUND: error(404, 'ResourceNotFoundException', { when: 'no such route' }),
  MME_ERR_METHOD_NOT_ALLOWED: error(405, 'MethodNotAllowedException', {
    when: 'the route exists but not for this HTTP method',
  }),
  MME_ERR_NOT_ACCEPTABLE: error(406, 'NotAcceptableException', {
    when: 'the Accept header asks for a response type the handler cannot produce',
  }),
  MME_ERR_UNLOAD_TIMEOUT: error(408, 'RequestTimeoutException', {
    when: 'an unload took longer than unregister_model_timeout: the model is unloaded all the same, its running requests were stopped and its workers killed',
  }),
  MME_ERR_DEADLINE_EXCEEDED: error(408, 'RequestTimeoutException', {
    when: "the request's own deadline (X-Request-Timeout, OIP parameters.timeout, gRPC grpc-timeout) passed before its answer: while queued it never reached a worker; while running its handler was told to stop (context.isCancelled)",
  }),
  MME_ERR_MODEL_CONFLICT: error(409, 'ConflictStatusException', {
    when: 'a model of that name is already loaded or loading',
  }),
  MME_ERR_PAYLOAD_TOO_LARGE: error(413, 'RequestEntityTooLargeException', {
    when: 'the request body is over max_request_size',
  }),
  MME_ERR_UNSUPPORTED_MEDIA_TYPE: error(415, 'UnsupportedMediaTypeException', {
    when: 'the handler cannot read the request Content-Type',
  }),
  MME_ERR_CLIENT_CLOSED: error(499, 'ClientClosedRequestException', {
    when: 'the client closed its connection before the answer (logged and in metrics as a cancellation, never as a 4xx or 5xx error)',
  }),
  MME_ERR_HEADERS_TOO_LARGE: error(431, 'RequestHeaderFieldsTooLargeException', {
    when: 'request headers are too large or too many',
  }),
  MME_ERR_INTERNAL: error(500, 'InternalServerException', { when: 'a bug: the server log has the details' }),
  MME_ERR_WORKER_DIED: error(500, 'InternalServerException', {
    when: 'the worker process running this request crashed (it is restarted; queued requests are kept)',
  }),
  MME_ERR_WORKER_PROTOCOL: error(500, 'InternalServerException', {
    when: 'the worker sent a malformed or oversized frame; it was stopped and is being replaced',
  }),
  MME_ERR_LOAD_FAILED: error(500, 'InternalServerException', { when: 'a worker exited while loading the model' }),
  MME_ERR_LOAD_TIMEOUT: error(500, 'InternalServerException', {
    when: 'a worker did not finish loading within model_load_timeout',
  }),
  MME_ERR_MODEL_ERROR: error(500, 'PredictionException', {
    when: 'the model or its handler failed on this request (a handler may raise its own 5xx status)',
  }),
  MME_ERR_RESPONSE_TOO_LARGE: error(500, 'InternalServerException', { when: 'the response is over max_response_size' }),
  MME_ERR_QUEUE_FULL: error(503, 'ServiceUnavailableException', {
    when: "the model's job queue (job_queue_size) is full",
  }),
  MME_ERR_NO_WORKER: error(503, 'ServiceUnavailableException', {
    when: 'the model has no worker, or job tickets are on and every worker is busy',
  }),
  MME_ERR_MODEL_LOADING: error(503, 'ServiceUnavailableException', {
    when: 'the model is still loading; retry after Retry-After seconds',
  }),
  MME_ERR_LOAD_WAIT_TIMEOUT: error(503, 'ServiceUnavailableException', {
    when: 'the load waited its load_timeout for a load permit or for room behind other loads; retry later',
  }),
  MME_ERR_MODEL_FAILED: error(503, 'ServiceUnavailableException', {
    when: "the model's workers keep failing to start; describe shows the cause",
  }),
  MME_ERR_SHUTTING_DOWN: error(503, 'ServiceUnavailableException', { when: 'the server is shutting down' }),
  MME_ERR_REPOSITORY_UNAVAILABLE: error(503, 'ServiceUnavailableException', {
    when: "model_repository refused the download (credentials, permissions: the store's error code is in the server log), kept failing after retries, or the disk cache has no room that is not held by loaded models",
  }),
  MME_ERR_REPOSITORY_TIMEOUT: error(504, 'RepositoryTimeoutException', {
    when: 'model_repository stayed silent longer than model_repository_timeout (no answer, or a download that stalled)',
  }),
  MME_ERR_WORKER_TIMEOUT: error(504, 'WorkerTimeoutException', {
    when: 'no answer within the response timeout (queue wait included); a worker that ran over is killed and replaced',
  }),
  MME_ERR_INSUFFICIENT_MEMORY: error(507, 'InsufficientMemoryException', {
    when: 'not enough memory to load or run the model: the budget has no room, the worker reported an allocation failure, or it was SIGKILLed by someone other than the server (the kernel OOM killer)',
  }),
  MME_ERR_MODEL_LIMIT: error(507, 'ModelLimitException', {
    when: 'max_loaded_models models are loaded and none could be evicted: 507 so that SageMaker unloads one (a count, not memory: the memory code means memory only); elsewhere unload a model or raise max_loaded_models',
  }),
  MME_ERR_INSUFFICIENT_STORAGE: error(507, 'InsufficientStorageException', {
    when: 'the disk is full (ENOSPC) or over its quota (EDQUOT) where the server writes a model (TMPDIR for extracted archives, model_cache_dir for model_repository downloads): 507 so that SageMaker unloads idle models, whose files go with them; elsewhere unload a model or give that directory more room',
  }),
  MME_ERR_CONFIG: error(500, 'ConfigurationException', {
    when: 'start-up only: config.properties, environment or command line is invalid (the message names the key)',
  }),
};

export type ErrorCode = keyof typeof ERRORS;

const kMmeError = Symbol.for('sagemaker-mme.error');

export class MmeError extends Error {
  readonly code: ErrorCode;
  /** HTTP status; a custom handler may raise any 4xx/5xx, so it is not always the table's. */
  readonly status: number;
  readonly type: string;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { status?: number; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(capMessage(message), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'MmeError';
    this.code = code;
    this.status = opts.status ?? ERRORS[code].status;
    this.type = ERRORS[code].type;
    this.headers = Object.freeze({ ...opts.headers });
    Object.defineProperty(this, kMmeError, { value: true });
  }

  toBody() {
    return { code: this.status, type: this.type, message: this.message, errorCode: this.code };
  }

  /** Serialised form that crosses the worker pipe (no stack: the client never sees one). */
  toWire(): WireError {
    return { code: this.code, status: this.status, message: this.message };
  }

  /** The same error told another way (the server's paths hidden): this one when the message is unchanged. */
  withMessage(message: string): MmeError {
    if (message === this.message) return this;
    return new MmeError(this.code, message, { status: this.status, headers: { ...this.headers }, cause: this });
  }

  static fromWire(w: WireError): MmeError {
    const code = (Object.hasOwn(ERRORS, w.code) ? w.code : 'MME_ERR_INTERNAL') as ErrorCode;
    return new MmeError(code, w.message, { status: w.status });
  }
}

/** The errors of one code, for a module that raises many: `const invalid = errorOf('MME_ERR_INVALID_MODEL')`. */
export const errorOf = (code: ErrorCode) => (message: string) => new MmeError(code, message);
/** A start-up error: what is wrong in config.properties, the environment or the command line, and what to change. */
export const configError = errorOf('MME_ERR_CONFIG');
/** The model artifact is unusable (400): what is wrong with it and how to fix it. */
export const invalidModel = errorOf('MME_ERR_INVALID_MODEL');

/** An error as it crosses the worker pipe: its code as text, since the other side may not know it. */
export type WireError = Pick<MmeError, 'status' | 'message'> & { code: string };

/** Most characters of client input an error message quotes. */
export const QUOTE_LIMIT = 100;
/**
 * The backstop for a whole message: a handler's own error or a long list of a model's inputs can
 * be long, but no error body may approach max_response_size or the frame limit.
 */
export const MESSAGE_LIMIT = 8192;

/**
 * Client text as an error message may show it: JSON-quoted, at most QUOTE_LIMIT characters of it,
 * and how much was left out. Only the head is read, so a 6 MB string costs no more than a short one.
 */
export function quote(text: string): string {
  if (text.length <= QUOTE_LIMIT) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTE_LIMIT))}… (${text.length} characters)`;
}

/** A client value (an element, a field) for an error message: strings quoted, scalars as JSON, containers by kind. */
export function quoteValue(value: unknown): string {
  if (typeof value === 'string') return quote(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null || typeof value !== 'object')
    return typeof value === 'bigint' ? `${value}` : String(JSON.stringify(value) ?? typeof value);
  return 'an object';
}

export function capMessage(message: string, limit = MESSAGE_LIMIT): string {
  return message.length <= limit ? message : `${message.slice(0, limit)}… (${message.length - limit} more characters)`;
}

export function isMmeError(err: unknown): err is MmeError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[kMmeError] === true;
}

/**
 * What marks a resource failure (507 rather than 500), taken from Triton's SageMaker server, which
 * maps the same engine messages for the same contract. A full disk (or /dev/shm, where onnxruntime
 * and handlers map files) is 507 too, under its own code: the memory code means memory only.
 */
const kOutOfMemory =
  /out ?of ?memory|memoryerror|failed to allocate memory|bad_alloc|cannot allocate memory|enomem|cuda_out_of_memory|cublas_status_alloc_failed|allocation failed|\boom\b/i;
const kOutOfSpace = /no space left on device|enospc|edquot|disk quota exceeded/i;

/**
 * The 507 a failure's message reports, `doing` what ran short (e.g. "loading the model"), or undefined.
 * `outOfMemory`: the caller already knows it from the error itself (a RangeError from an allocation).
 */
export function shortageError(message: string, doing: string, outOfMemory = false): MmeError | undefined {
  if (kOutOfSpace.test(message))
    return new MmeError('MME_ERR_INSUFFICIENT_STORAGE', `${doing} ran out of disk or shared-memory space: ${message}`);
  if (outOfMemory || kOutOfMemory.test(message))
    return new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `${doing} ran out of memory: ${message}`);
  return undefined;
}
