/**
 * The flow control of a stream of requests (StreamPredictions2). Each request read is submitted at
 * once, so it is queued and batched like any other, and its answer is written in the order the
 * requests came. The stream holds at most `limit` requests: from reading one until its answer has
 * left (queued, running, answered but behind an earlier one, or in an unsent write). At the limit
 * it stops reading, so grpc-js stops pulling from HTTP/2 and HTTP/2's flow control stops the
 * client: a client writing faster than the model answers costs the server `limit` requests, not
 * everything it sent. A cancel drops every held request at once: queued ones leave the model's
 * queue unrun, a running one sees context.isCancelled.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { Fifo } from '../util/fifo';

/** What the streams of one listener hold, for tests and diagnosis. */
export class StreamLoad {
  /** Requests read from every stream so far. */
  read = 0;
  /** Requests read and not yet answered (or dropped by a cancel). */
  held = 0;
  /** The most `held` has been. */
  peakHeld = 0;

  change(by: number): void {
    this.held += by;
    if (by > 0) this.read += by;
    this.peakHeld = Math.max(this.peakHeld, this.held);
  }
}

export interface OrderedStream<Req, Res> {
  /** How many requests may be held once `req` is read: its model's job_queue_size. */
  limit(req: Req): number;
  /** The answer to `req`; a failure is an answer too, so it never rejects. */
  answer(req: Req, signal: AbortSignal): Promise<Res>;
  /** Aborted on the client's cancel or deadline. */
  signal: AbortSignal;
  load: StreamLoad;
  /** The client half-closed and every answer has been written. */
  finished(): void;
}

interface Held<Res> {
  client: AbortController;
  answer: Promise<Res>;
}

/**
 * grpc-js's Readable reads ahead up to its highWaterMark (16 messages) even while paused, and its
 * constructor takes no option for it. At 0 it reads one message per pull, so pausing stops reading.
 */
function readOnDemand(stream: ServerDuplexStream<unknown, unknown>): void {
  const state = (stream as unknown as { _readableState?: { highWaterMark: number } })._readableState;
  if (state) state.highWaterMark = 0;
}

export function answerInOrder<Req, Res>(stream: ServerDuplexStream<Req, Res>, opts: OrderedStream<Req, Res>): void {
  const waiting = new Fifo<Held<Res>>();
  let held = 0;
  let limit = 1;
  let ended = false;
  let writing = false;
  readOnDemand(stream);

  const change = (by: number) => {
    held += by;
    opts.load.change(by);
  };
  const released = () => {
    if (opts.signal.aborted) return;
    change(-1);
    if (stream.isPaused() && held < limit) stream.resume();
    if (ended && held === 0) opts.finished();
  };

  opts.signal.addEventListener(
    'abort',
    () => {
      for (const h of waiting.drainAll()) h.client.abort();
      change(-held);
    },
    { once: true },
  );

  // Answers leave in request order: each waits for the one before it.
  const writeAnswers = async () => {
    writing = true;
    for (let next = waiting.peek(); next && !opts.signal.aborted; next = waiting.peek()) {
      const answer = await next.answer;
      if (opts.signal.aborted) break;
      waiting.shift();
      // Held until the write has gone out: a client that never reads its answers stops being read too.
      stream.write(answer, released);
    }
    writing = false;
  };

  stream.on('data', (req: Req) => {
    if (opts.signal.aborted) return;
    change(1);
    const client = new AbortController();
    waiting.push({ client, answer: opts.answer(req, client.signal) });
    limit = opts.limit(req);
    if (held >= limit) stream.pause();
    if (!writing) void writeAnswers();
  });
  stream.on('end', () => {
    ended = true;
    if (held === 0) opts.finished();
  });
}
