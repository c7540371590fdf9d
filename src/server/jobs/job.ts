import type { MmeError } from '../../errors';
import type { ChunkMessage, InvokeRequest } from '../../protocol/messages';
import { IdAllocator, MAX_WIRE_ID } from '../../protocol/ids';
import { forRequest } from '../../unhandled-rejection';

export interface InvokeResult {
  status: number;
  contentType: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Time in the model (handler + run) for the batch this request ran in, µs. */
  modelMicros: number;
  /** Time from admission to dispatch to a worker, µs. */
  queueMicros: number;
  batchSize: number;
  /** The worker process that ran it (a trace's run span names it). */
  workerPid?: number;
  /** Time the invoke waited for its model's on-demand load, µs (ModelLoadingWaitTime); absent = none. */
  loadWaitMicros?: number;
}

/**
 * What a job reads of its client's AbortSignal: whether it left, and the one handler told when it
 * does. An AbortSignal is one; the gateway's Invocation is a cheaper one (an AbortSignal and its
 * listener cost microseconds of CPU a request: bench-results/part27-fold).
 */
export interface ClientSignal {
  readonly aborted: boolean;
  onabort: ((event: Event) => unknown) | null;
}

export interface JobOptions {
  /** Aborted when the client goes away: a queued job is dropped without running; a running one is told. */
  signal?: ClientSignal;
  /**
   * Receives the intermediate chunks of a streamed response; the first carries the response head.
   * Call `delivered` once the chunk's bytes have left for the client: the handler sends more only then.
   */
  onChunk?: (chunk: ChunkMessage, delivered: () => void) => void;
  /**
   * The caller's own deadline on the server's clock, already bounded by max_request_timeout: past it
   * a queued job is answered 408 without running, a running one is cancelled as on a disconnect.
   */
  deadline?: number;
  /** The caller's priority level, 0 first, already checked against priority_levels; absent = the middle level. */
  priority?: number;
}

/** Request ids on the wire: Cancel, ChunkAck and the answers find their request by it. */
export const jobIds = new IdAllocator(MAX_WIRE_ID);

/** One admitted request: settles exactly once, whatever happens to its worker. */
export class Job {
  readonly id = jobIds.next();
  dispatchedAt = 0;
  settled = false;
  /** Put back in the queue once already, after a worker died with it waiting in its pipe. */
  requeued = false;
  /**
   * The clock's now() past which it fails: with 504 at the response timeout (counted from admission),
   * or with 408 at its caller's deadline when that comes first (`callerDeadline`).
   */
  deadline = 0;
  callerDeadline = false;
  readonly promise: Promise<InvokeResult>;
  #resolve!: (r: InvokeResult) => void;
  #reject!: (e: MmeError) => void;

  /** `admittedAt`: the dispatcher's clock.now() at admission (the server's clock). */
  constructor(
    readonly request: InvokeRequest,
    readonly opts: JobOptions,
    readonly admittedAt: number,
  ) {
    request.id = this.id;
    // Named should its failure ever reach nobody: the bug that ended a server after 2^32 requests left one so.
    this.promise = forRequest(
      new Promise((resolve, reject) => {
        this.#resolve = resolve;
        this.#reject = reject;
      }),
      request.requestId,
    );
  }

  get cancelled(): boolean {
    return this.opts.signal?.aborted === true;
  }

  resolve(r: InvokeResult): void {
    if (this.#settle()) this.#resolve(r);
  }

  reject(e: MmeError): void {
    if (this.#settle()) this.#reject(e);
  }

  #settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    // A settled job may stay in the dispatcher's deadline list behind a long-running one until the
    // list is pruned: it must not hold the client's body and headers meanwhile (two 6 MB bodies a
    // round once grew the server to 2 GiB).
    this.request.body = undefined;
    this.request.headers = undefined;
    return true;
  }
}
