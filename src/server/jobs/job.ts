import type { MmeError } from '../../errors';
import type { ChunkMessage, InvokeRequest } from '../../protocol/messages';
import type { ResponseHead } from '../../model-types';
import { IdAllocator, MAX_WIRE_ID } from '../../protocol/ids';
import { forRequest } from '../../unhandled-rejection';
import { deferred } from '../../util/deferred';

export interface InvokeResult extends ResponseHead {
  body: Buffer;
  /** Time in the model (handler + run) for its batch, and from admission to dispatch, µs. */
  modelMicros: number;
  queueMicros: number;
  batchSize: number;
  /** What a trace's run span names. */
  workerPid?: number;
  /** Time the invoke waited for its model's on-demand load, µs (ModelLoadingWaitTime); absent = none. */
  loadWaitMicros?: number;
}

export interface JobOptions {
  /**
   * The client went away: a queued job is dropped without running; a running one is told. What it
   * reads of an AbortSignal: a door's request is a cheaper one (bench-results/part27-fold).
   */
  signal?: Pick<AbortSignal, 'aborted' | 'onabort'>;
  /** A streamed response's chunks (the first carries its head); `delivered` once its bytes left: the handler sends more only then. */
  onChunk?: (chunk: ChunkMessage, delivered: () => void) => void;
  /** The caller's deadline on the server's clock (bounded by max_request_timeout): 408, a running job cancelled. */
  deadline?: number;
  /** 0 first, checked against priority_levels; absent = the middle level. */
  priority?: number;
}

/** Request ids on the wire: Cancel, ChunkAck and the answers find their request by it. */
export const jobIds = new IdAllocator(MAX_WIRE_ID);

/** One admitted request: settles exactly once, whatever happens to its worker. */
export class Job {
  readonly id = jobIds.next();
  dispatchedAt = 0;
  settled = false;
  /** Put back in the queue once already, after a worker died with it in its pipe. */
  requeued = false;
  /** The clock's now() past which it fails: the response timeout (504), or its caller's deadline (408) when that comes first. */
  readonly deadline: number;
  readonly callerDeadline: boolean;
  readonly promise: Promise<InvokeResult>;
  readonly #outcome = deferred<InvokeResult>();

  /** `admittedAt`: the server's clock.now() at admission; `timeoutAt`: when the response timeout ends it. */
  constructor(
    readonly request: InvokeRequest,
    readonly opts: JobOptions,
    readonly admittedAt: number,
    timeoutAt: number,
  ) {
    request.id = this.id;
    this.callerDeadline = opts.deadline !== undefined && opts.deadline < timeoutAt;
    this.deadline = this.callerDeadline ? opts.deadline! : timeoutAt;
    // Named should its failure ever reach nobody: the bug that ended a server after 2^32 requests left one so.
    this.promise = forRequest(this.#outcome.promise, request.requestId);
  }

  resolve(r: InvokeResult): void {
    if (this.#settle()) this.#outcome.resolve(r);
  }

  reject(e: MmeError): void {
    if (this.#settle()) this.#outcome.reject(e);
  }

  #settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    // It may stay in a deadline list until that is pruned: without the client's body and headers
    // (two 6 MB bodies a round once grew the server to 2 GiB).
    this.request.body = undefined;
    this.request.headers = undefined;
    return true;
  }
}
