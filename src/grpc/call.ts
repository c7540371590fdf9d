/**
 * What every gRPC call gets from the gateway, as an HTTP request does: a request id (x-request-id
 * metadata), the listener's guard, an abort on the client's cancel or deadline, metric, trace and
 * error line.
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
  manager: ModelManager;
  loopbackOnly: boolean;
  inferenceToken: InferenceToken | null;
}

type SurfaceCall = Pick<ServerUnaryCall<unknown, unknown>, 'getHost' | 'metadata' | 'sendMetadata' | 'getDeadline'> & {
  on(event: 'cancelled', listener: () => void): unknown;
};

function authorityHost(authority: string): string {
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(authority);
  return m ? m[1] : authority;
}

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
  /** Made only for a stream; a unary call's invocation is its own signal. */
  #client: AbortController | null = null;
  #invocation: Invocation | null = null;
  #cancelled = false;
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

  /** A close from now on is no cancel. */
  answered(): void {
    this.#sendMetadata();
    this.#answered = true;
  }

  /** The trace context is read first, so a refusal joins its trace as an HTTP one does. */
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
   * The client's metadata as request headers (-bin entries left out), a copy a request may add to;
   * without a prototype, so a client's "__proto__" is a header like any other.
   */
  headers(): Record<string, string> {
    if (this.#headers === null) {
      this.#headers = Object.create(null) as Record<string, string>;
      for (const [k, v] of Object.entries(this.call.metadata.getMap())) if (typeof v === 'string') this.#headers[k] = v;
    }
    return Object.assign(Object.create(null) as Record<string, string>, this.#headers);
  }

  /** grpc-js holds grpc-timeout as a wall-clock deadline (Infinity: none). */
  #askDeadline(inv: Invocation): void {
    const deadline = this.call.getDeadline();
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    if (Number.isFinite(at)) inv.deadlineIn(at - Date.now());
  }

  /** A handler's status from 400 up fails the call: gRPC has no error status with an answer. */
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

  fail(err: unknown): Partial<ServiceError> {
    const e = this.deps.gateway.failure(err, this.requestId, `grpc ${this.method}`, (x) => Status[grpcStatusOf(x)]);
    return toServiceError(e);
  }
}

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
