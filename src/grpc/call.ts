/**
 * What every gRPC call gets, as an HTTP request does, from the gateway: a request id (sent back as
 * x-request-id metadata), the listener's guard, an AbortSignal that aborts on the client's cancel or
 * deadline (queued work is dropped, a running streaming handler sees context.isCancelled), the
 * invocation metric and trace, and the error log line.
 */
import {
  Metadata,
  status as Status,
  type handleUnaryCall,
  type ServerUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import { MmeError } from '../errors';
import type { InferenceToken } from '../gateway/bearer-tokens';
import type { DoorGuard } from '../gateway/door-guard';
import {
  newRequestId,
  type Gateway,
  type Invocation,
  type ModelAnswer,
  type ModelRequest,
  type OipParameters,
  type RunOptions,
} from '../gateway/gateway';
import type { ModelManager } from '../gateway/models';
import { decoded } from './lenient-decoding';
import { grpcStatusOf, toServiceError } from './status';

export interface GrpcDeps {
  gateway: Gateway;
  /** For the metadata, readiness and Ping calls, and a stream's bound. */
  manager: ModelManager;
  /** The listener is on a loopback address: serve only calls whose :authority is a loopback name. */
  loopbackOnly: boolean;
  /** inference_token: every call but the health checks needs it; null when unset. */
  inferenceToken: InferenceToken | null;
}

/** What every kind of call (unary, server or bidirectional stream) offers. */
type SurfaceCall = Pick<ServerUnaryCall<unknown, unknown>, 'getHost' | 'metadata' | 'sendMetadata' | 'getDeadline'> & {
  on(event: 'cancelled', listener: () => void): unknown;
};

/** ":authority" is host[:port], with IPv6 hosts in brackets. */
function authorityHost(authority: string): string {
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(authority);
  return m ? m[1] : authority;
}

/** One guard per listener, made at its first call. */
const kDoors = new WeakMap<GrpcDeps, DoorGuard>();

function doorOf(deps: GrpcDeps): DoorGuard {
  let door = kDoors.get(deps);
  if (!door) {
    door = deps.gateway.door({
      transport: 'grpc',
      loopbackOnly: deps.loopbackOnly,
      inferenceToken: deps.inferenceToken,
    });
    kDoors.set(deps, door);
  }
  return door;
}

export class GrpcCall {
  readonly requestId = newRequestId();
  /** Made for a stream, whose requests are aborted together; a unary call's invocation is aborted alone. */
  #client: AbortController | null = null;
  #invocation: Invocation | null = null;
  #cancelled = false;
  #answered = false;
  #metadataPending = true;
  #headers: Record<string, string> | null = null;

  /**
   * A stream's metadata goes out at once, before its first message. A unary call's waits for the
   * answer (`metadataAtAnswer`): its HEADERS frame then leaves in the same write as the message and
   * the status, one socket write and one client wake-up per call instead of two.
   */
  constructor(
    readonly deps: GrpcDeps,
    private readonly call: SurfaceCall,
    private readonly method: string,
    metadataAtAnswer = false,
  ) {
    // grpc-js reports every closed stream as cancelled, answered ones too.
    call.on('cancelled', () => {
      if (this.#answered) return;
      this.#cancelled = true;
      this.#client?.abort();
      this.#invocation?.abort();
    });
    if (!metadataAtAnswer) this.#sendMetadata();
  }

  /** Aborted on the client's cancel or deadline. */
  get signal(): AbortSignal {
    if (this.#client === null) {
      this.#client = new AbortController();
      if (this.#cancelled) this.#client.abort();
    }
    return this.#client.signal;
  }

  #sendMetadata(): void {
    if (!this.#metadataPending) return;
    this.#metadataPending = false;
    const metadata = new Metadata();
    metadata.set('x-request-id', this.requestId);
    this.call.sendMetadata(metadata);
  }

  /** The answer (or error) is on its way: a close from now on is no cancel. */
  answered(): void {
    this.#sendMetadata();
    this.#answered = true;
  }

  /**
   * An invocation of this call, past the listener's guard (door-guard.ts). The caller's trace
   * context is read first, so a refusal joins its trace as an HTTP one does.
   */
  guard(): Invocation {
    const inv = this.deps.gateway.invocation(this.requestId);
    inv.traceFrom(this.headers());
    const [authorization] = this.call.metadata.get('authorization');
    try {
      doorOf(this.deps).check({
        operation: this.method,
        host: authorityHost(this.call.getHost()),
        authorization: typeof authorization === 'string' ? authorization : undefined,
        dataPlane: true,
      });
    } catch (err) {
      inv.finish(err);
      throw err;
    }
    return inv;
  }

  /**
   * The client's metadata as the handler's request headers (binary -bin entries left out), a copy
   * a request may add to. Without a prototype: a client's "__proto__" or "toString" is a header
   * like any other.
   */
  headers(): Record<string, string> {
    if (this.#headers === null) {
      this.#headers = Object.create(null) as Record<string, string>;
      for (const [k, v] of Object.entries(this.call.metadata.getMap())) if (typeof v === 'string') this.#headers[k] = v;
    }
    return Object.assign(Object.create(null) as Record<string, string>, this.#headers);
  }

  /** The call's grpc-timeout, which grpc-js holds as a wall-clock deadline (Infinity: none). */
  #askDeadline(inv: Invocation): void {
    const deadline = this.call.getDeadline();
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    if (Number.isFinite(at)) inv.deadlineIn(at - Date.now());
  }

  /**
   * Runs one request on `name` through the gateway's invocation `inv` (from guard()), within the
   * call's deadline and OIP's `parameters`. It is aborted with the call unless `run` brings its
   * own signal (one of a stream's requests). A handler's status from 400 up fails the call: gRPC
   * has no error status with an answer.
   */
  async invoke(
    inv: Invocation,
    name: string,
    request: ModelRequest,
    run: RunOptions = {},
    parameters: OipParameters = {},
  ): Promise<ModelAnswer> {
    let result: ModelAnswer;
    try {
      inv.target(name);
      this.#askDeadline(inv);
      inv.askOip(parameters);
      if (run.signal === undefined) {
        this.#invocation = inv;
        if (this.#cancelled) inv.abort();
      }
      result = await inv.run(request, run);
      if (result.status >= 400)
        throw new MmeError('MME_ERR_MODEL_ERROR', `Model ${name} answered with status ${result.status}.`, {
          status: result.status,
        });
    } catch (err) {
      inv.finish(err);
      throw err;
    }
    inv.finish();
    return result;
  }

  /** Runs `work` past the guard, then `answer`s with its result, or with its failure as a gRPC status. */
  serve<T>(
    work: (inv: Invocation) => T | Promise<T>,
    answer: (err: Partial<ServiceError> | null, res?: T) => void,
  ): void {
    Promise.resolve()
      .then(() => work(this.guard()))
      .then(
        (res) => {
          this.answered();
          answer(null, res);
        },
        (err) => {
          this.answered();
          answer(this.fail(err));
        },
      );
  }

  /**
   * The error as a gRPC status, logged as HTTP errors are: request id, method, status and code,
   * and the message only for server faults (4xx messages may echo client text).
   */
  fail(err: unknown): Partial<ServiceError> {
    const e = this.deps.gateway.failure(err, this.requestId, `grpc ${this.method}`, (x) => Status[grpcStatusOf(x)]);
    return toServiceError(e);
  }
}

/** A unary method: guarded, answered, and its failure mapped to a gRPC status. */
export function unary<Req, Res>(
  deps: GrpcDeps,
  method: string,
  fn: (request: Req, call: GrpcCall, inv: Invocation) => Res | Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const scope = new GrpcCall(deps, call, method, true);
    scope.serve((inv) => fn(decoded(call.request), scope, inv), callback);
  };
}
