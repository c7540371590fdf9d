/**
 * What every gRPC call gets, as an HTTP request does, from the gateway: a request id (sent back as
 * x-request-id metadata), the listener guards, a CancelToken that fires on the client's cancel or
 * deadline (queued work is dropped, a running streaming handler sees context.isCancelled), the
 * invocation metric, and the error log line.
 */
import {
  Metadata,
  status as Status,
  type handleUnaryCall,
  type ServerUnaryCall,
  type ServiceError,
} from '@grpc/grpc-js';
import { MmeError, isMmeError } from '../errors';
import type { InferenceToken } from '../gateway/bearer-tokens';
import { newRequestId, type Gateway, type Invocation, type ModelRequest } from '../gateway/gateway';
import { MICROSECONDS } from '../gateway/request-controls';
import { CancelToken } from '../util/cancel-token';
import { isLoopback } from '../util/loopback';
import type { InvokeResult, JobOptions } from '../server/jobs/job';
import type { ModelManager } from '../server/models/model-manager';
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

/** The health checks, open without inference_token as HTTP's /ping is. */
const kHealthMethods = new Set(['ServerLive', 'ServerReady', 'Ping']);

/** What every kind of call (unary, server or bidirectional stream) offers. */
type SurfaceCall = Pick<ServerUnaryCall<unknown, unknown>, 'getHost' | 'metadata' | 'sendMetadata' | 'getDeadline'> & {
  on(event: 'cancelled', listener: () => void): unknown;
};

/** ":authority" is host[:port], with IPv6 hosts in brackets. */
function authorityHost(authority: string): string {
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(authority);
  return m ? m[1] : authority;
}

export class GrpcCall {
  readonly requestId = newRequestId();
  readonly cancel = new CancelToken();
  #answered = false;
  #metadataPending = true;

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
      if (!this.#answered) this.cancel.cancel();
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

  /** The answer (or error) is on its way: a close from now on is no cancel. */
  answered(): void {
    this.#sendMetadata();
    this.#answered = true;
  }

  /**
   * Refused before any work, as the HTTP guards refuse: during shutdown, a foreign :authority on a
   * loopback listener, and a call without inference_token.
   */
  guard(): void {
    this.deps.gateway.admit();
    if (this.deps.loopbackOnly && !isLoopback(authorityHost(this.call.getHost()))) {
      throw new MmeError(
        'MME_ERR_FORBIDDEN',
        'This gRPC listener is bound to a loopback address and serves only calls whose :authority is localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding). To serve other hosts, set grpc_inference_address to their address (e.g. 0.0.0.0).',
      );
    }
    if (this.deps.inferenceToken !== null && !kHealthMethods.has(this.method)) {
      const [authorization] = this.call.metadata.get('authorization');
      this.deps.inferenceToken.check(
        typeof authorization === 'string' ? authorization : undefined,
        'authorization metadata',
      );
    }
  }

  /**
   * The client's metadata as the handler's request headers (binary -bin entries left out). Without
   * a prototype: a client's "__proto__" or "toString" is a header like any other.
   */
  headers(): Record<string, string> {
    const out = Object.create(null) as Record<string, string>;
    for (const [k, v] of Object.entries(this.call.metadata.getMap())) if (typeof v === 'string') out[k] = v;
    return out;
  }

  /** The call's grpc-timeout, which grpc-js holds as a wall-clock deadline (Infinity: none). */
  #askDeadline(invocation: Invocation): void {
    const deadline = this.call.getDeadline();
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    if (Number.isFinite(at)) invocation.deadlineIn(at - Date.now());
  }

  /**
   * Runs one request on `name` through the gateway, within the call's deadline and the request's
   * own parameters (`asked`: OIP's timeout, in microseconds, and priority). It is cancelled with the
   * call unless `opts` brings its own token (one of a stream's requests). A handler's status from
   * 400 up fails the call: gRPC has no error status with an answer.
   */
  async invoke(
    name: string,
    request: ModelRequest,
    opts: JobOptions = {},
    asked: { timeout?: unknown; priority?: unknown } = {},
  ): Promise<InvokeResult> {
    const cancel = opts.cancel ?? this.cancel;
    const invocation = this.deps.gateway.invocation(this.requestId);
    let status = 200;
    try {
      invocation.target(name);
      this.#askDeadline(invocation);
      if (asked.timeout !== undefined) invocation.askTimeout(asked.timeout, MICROSECONDS, 'parameters.timeout');
      if (asked.priority !== undefined) invocation.askPriority(asked.priority, 'parameters.priority');
      const result = await invocation.run(request, { ...opts, cancel });
      if (result.status >= 400)
        throw new MmeError('MME_ERR_MODEL_ERROR', `Model ${name} answered with status ${result.status}.`, {
          status: result.status,
        });
      return result;
    } catch (err) {
      status = cancel.cancelled ? 499 : isMmeError(err) ? err.status : 500;
      throw err;
    } finally {
      invocation.finish(status);
    }
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
  fn: (request: Req, call: GrpcCall) => Res | Promise<Res>,
): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const scope = new GrpcCall(deps, call, method, true);
    Promise.resolve()
      .then(() => {
        scope.guard();
        return fn(decoded(call.request), scope);
      })
      .then(
        (res) => {
          scope.answered();
          callback(null, res);
        },
        (err) => {
          scope.answered();
          callback(scope.fail(err));
        },
      );
  };
}
