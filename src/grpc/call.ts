/**
 * A gRPC call as the gateway's requests: a request id (x-request-id metadata), the client's cancel,
 * its metadata as headers, and each method's decoding of its message into a request and encoding
 * of the answer.
 */
import {
  Metadata,
  status as Status,
  type handleUnaryCall,
  type ServerUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import { MmeError } from '../errors';
import type {
  AnswerChunk,
  DoorGuard,
  DoorRequest,
  DoorSignal,
  Headers,
  Knock,
  ModelAnswer,
  OipPayload,
  Payload,
} from '../gateway/door';
import { newRequestId, type Gateway } from '../gateway/gateway';
import type { ModelManager } from '../gateway/models';
import { decoded } from './lenient-decoding';
import { toServiceError } from './status';

/** What the services of one listener share; its guard is made once, where the listener is. */
export interface GrpcDeps {
  gateway: Gateway;
  manager: ModelManager;
  guard: DoorGuard;
}

/** What a method makes of its decoded message: the model it names, what the model gets, and the answer. */
export interface GrpcMethod<Req, Res> {
  /** Absent: the method answers without a model (health, metadata). */
  target?(req: Req): string;
  payload?(req: Req, call: GrpcCall): Payload | OipPayload;
  answer(req: Req, answer: ModelAnswer | null): Res;
}

type SurfaceCall = Pick<ServerUnaryCall<unknown, unknown>, 'getHost' | 'metadata' | 'sendMetadata' | 'getDeadline'> & {
  on(event: 'cancelled', listener: () => void): unknown;
};

/** One call, and the signal of the request it carries (a stream's requests each have their own, and its own is the stream's). */
export class GrpcCall implements DoorSignal {
  readonly requestId = newRequestId();
  aborted = false;
  onabort: DoorSignal['onabort'] = null;
  #answered = false;
  #metadataPending = true;
  #headers: Record<string, string> | null = null;

  /**
   * A unary call's metadata waits for the answer (`metadataAtAnswer`): its HEADERS frame then leaves
   * in one socket write with the message and status, one client wake-up instead of two.
   */
  constructor(
    readonly deps: GrpcDeps,
    private readonly call: SurfaceCall,
    readonly method: string,
    metadataAtAnswer = false,
  ) {
    // grpc-js reports every closed stream as cancelled, answered ones too.
    call.on('cancelled', () => {
      if (this.#answered || this.aborted) return;
      this.aborted = true;
      this.onabort?.(new Event('abort'));
    });
    if (!metadataAtAnswer) this.#sendMetadata();
  }

  #sendMetadata(): void {
    if (!this.#metadataPending) return;
    this.#metadataPending = false;
    const metadata = new Metadata();
    metadata.set('x-request-id', this.requestId);
    this.call.sendMetadata(metadata);
  }

  /** A close from now on is no cancel. */
  answered(): void {
    this.#sendMetadata();
    this.#answered = true;
  }

  get knock(): Knock {
    const [authorization] = this.call.metadata.get('authorization');
    return {
      operation: this.method,
      host: this.call.getHost(),
      authorization: typeof authorization === 'string' ? authorization : undefined,
      dataPlane: true,
    };
  }

  /**
   * The client's metadata as request headers (-bin entries left out); without a prototype, so a
   * client's "__proto__" is a header like any other.
   */
  get headers(): Headers {
    if (this.#headers === null) {
      this.#headers = Object.create(null) as Record<string, string>;
      for (const [k, v] of Object.entries(this.call.metadata.getMap())) if (typeof v === 'string') this.#headers[k] = v;
    }
    return this.#headers;
  }

  /** grpc-js holds grpc-timeout as a wall-clock deadline (Infinity: none). */
  get deadlineMs(): number | undefined {
    const deadline = this.call.getDeadline();
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    return Number.isFinite(at) ? at - Date.now() : undefined;
  }
}

export type GrpcSink<Res> = (err: Partial<ServiceError> | null, res?: Res) => void;

/** One request of a call: a unary call's message, or one of a stream's. */
export class GrpcRequest<Req, Res> implements DoorRequest {
  #message: Req | undefined;
  #name = '';

  constructor(
    private readonly call: GrpcCall,
    private readonly method: GrpcMethod<Req, Res>,
    private readonly raw: Req,
    private readonly sink: GrpcSink<Res>,
    readonly signal: DoorSignal = call,
    readonly onChunk?: (chunk: AnswerChunk, delivered: () => void) => void,
  ) {}

  get requestId() {
    return this.call.requestId;
  }
  get guard() {
    return this.call.deps.guard;
  }
  get knock() {
    return this.call.knock;
  }
  get headers() {
    return this.call.headers;
  }
  get where() {
    return `grpc ${this.call.method}`;
  }
  get deadlineMs() {
    return this.call.deadlineMs;
  }

  target(): string | null {
    this.#message = decoded(this.raw);
    if (!this.method.target) return null;
    this.#name = this.method.target(this.#message);
    return this.#name;
  }

  body(): Payload | OipPayload {
    return this.method.payload!(this.#message!, this.call);
  }

  /** A handler's status from 400 up fails the call: gRPC has no error status with an answer. */
  answer(a: ModelAnswer | null): void {
    if (a !== null && a.status >= 400)
      throw new MmeError('MME_ERR_MODEL_ERROR', `Model ${this.#name} answered with status ${a.status}.`, {
        status: a.status,
      });
    this.sink(null, this.method.answer(this.#message!, a));
  }

  fail(e: MmeError): string {
    const status = toServiceError(e);
    this.sink(status);
    return Status[status.code];
  }
}

export function unary<Req, Res>(deps: GrpcDeps, name: string, method: GrpcMethod<Req, Res>): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const scope = new GrpcCall(deps, call, name, true);
    void deps.gateway.handle(
      new GrpcRequest(scope, method, call.request, (err, res) => {
        scope.answered();
        callback(err, res);
      }),
    );
  };
}
