/**
 * The flow control of StreamPredictions2: each request read is submitted at once and answered in
 * order. The stream holds at most `limit` requests until their answers have left; at the limit it
 * stops reading, so HTTP/2's flow control stops a client writing faster than the model answers.
 */
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { DoorSignal } from '../gateway/door';
import { Fifo } from '../util/fifo';

/** What the streams of one listener hold, for tests and diagnosis. */
export class StreamLoad {
  read = 0;
  held = 0;
  /** The most `held` has been. */
  peakHeld = 0;
  /** Streams the server saw end before their answers (the client cancelled, or the server closed). */
  aborted = 0;

  change(by: number): void {
    this.held += by;
    if (by > 0) this.read += by;
    this.peakHeld = Math.max(this.peakHeld, this.held);
  }
}

export interface OrderedStream<Req, Res> {
  limit(req: Req): number;
  /** The answer to `req`; a failure is an answer too, so it never rejects. */
  answer(req: Req, signal: AbortSignal): Promise<Res>;
  /** The stream's own, which this takes: its onabort is set here. */
  signal: DoorSignal;
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

  opts.signal.onabort = () => {
    opts.load.aborted++;
    for (const h of waiting.drainAll()) h.client.abort();
    change(-held);
  };

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
