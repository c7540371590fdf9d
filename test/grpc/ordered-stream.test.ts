/**
 * answerInOrder (src/grpc/ordered-stream.ts), StreamPredictions2's flow control, on an object-mode
 * Duplex standing in for grpc-js's stream: the test feeds requests, resolves answers in any order
 * and lets each write go out when it chooses. Answers leave in request order; at most limit(req)
 * requests are held until their answers have gone out; a cancel aborts what is held; finished()
 * comes once the client ended and everything was written.
 */
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { answerInOrder, StreamLoad } from '../../src/grpc/ordered-stream';
import { settle } from '../helpers/settle';

interface Pending {
  req: number;
  signal: AbortSignal;
  resolve(answer: string): void;
}

/** A stream whose writes go out when the test lets them (flush), and the answers asked for. */
function harness(limit = 2) {
  const written: string[] = [];
  const unflushed: Array<() => void> = [];
  const stream = new Duplex({ objectMode: true, read() {} });
  // grpc-js takes each write at once and calls back once HTTP/2 has taken it: here, at flush().
  stream.write = ((chunk: string, done: () => void) => {
    written.push(chunk);
    unflushed.push(done);
    return true;
  }) as Duplex['write'];
  const asked: Pending[] = [];
  const cancel = new AbortController();
  const load = new StreamLoad();
  let finished = 0;
  answerInOrder(stream as unknown as ServerDuplexStream<number, string>, {
    limit: () => limit,
    answer: (req, signal) => new Promise<string>((resolve) => asked.push({ req, signal, resolve })),
    signal: cancel.signal,
    load,
    finished: () => finished++,
  });
  return {
    stream,
    written,
    asked,
    cancel,
    load,
    finishedCount: () => finished,
    /** Requests from the client, as grpc-js would deliver them. */
    send: async (...reqs: number[]) => {
      for (const r of reqs) stream.push(r);
      await settle();
    },
    /** Lets every write made so far go out (HTTP/2 took it). */
    flush: async () => {
      for (const done of unflushed.splice(0)) done();
      await settle();
    },
  };
}

describe('grpc/ordered-stream: StreamPredictions2 answers in order and holds at most limit requests', () => {
  it('writes answers in request order, whichever resolves first', async () => {
    const h = harness(10);
    await h.send(1, 2, 3);
    assert.deepEqual(
      h.asked.map((p) => p.req),
      [1, 2, 3],
      'each request is submitted as soon as it is read',
    );
    h.asked[2].resolve('c');
    h.asked[1].resolve('b');
    await settle();
    assert.deepEqual(h.written, [], 'nothing leaves before the first answer');
    h.asked[0].resolve('a');
    await settle();
    assert.deepEqual(h.written, ['a', 'b', 'c']);
  });

  it('stops reading at the limit and reads the next request only once an answer has gone out', async () => {
    const h = harness(2);
    await h.send(1, 2, 3, 4);
    assert.deepEqual(
      h.asked.map((p) => p.req),
      [1, 2],
      'two held: the other two are left unread',
    );
    assert.equal(h.load.held, 2);
    h.asked[0].resolve('a');
    await settle();
    assert.deepEqual(h.written, ['a']);
    assert.equal(h.asked.length, 2, 'an answer written but not yet gone out is still held');
    await h.flush();
    assert.deepEqual(
      h.asked.map((p) => p.req),
      [1, 2, 3],
      'one gone out, one more read',
    );
    for (const p of h.asked.slice(1)) p.resolve(`answer ${p.req}`);
    await settle();
    await h.flush();
    await settle();
    h.asked[3].resolve('answer 4');
    await settle();
    await h.flush();
    assert.deepEqual(h.written, ['a', 'answer 2', 'answer 3', 'answer 4']);
    assert.deepEqual([h.load.read, h.load.held, h.load.peakHeld], [4, 0, 2]);
  });

  it('calls finished() once the client has ended and every answer has gone out, not before', async () => {
    const h = harness(4);
    await h.send(1, 2);
    h.stream.push(null);
    await settle();
    assert.equal(h.finishedCount(), 0, 'two answers still owed');
    for (const p of h.asked) p.resolve(`answer ${p.req}`);
    await settle();
    assert.equal(h.finishedCount(), 0, 'written, not yet gone out');
    await h.flush();
    assert.equal(h.finishedCount(), 1);
  });

  it('on a cancel, aborts every request it holds, holds nothing, and writes no answer that comes later', async () => {
    const h = harness(3);
    await h.send(1, 2, 3, 4);
    h.asked[0].resolve('a');
    await settle();
    h.cancel.abort();
    await settle();
    assert.deepEqual(
      h.asked.map((p) => p.signal.aborted),
      [false, true, true],
      'the answered one is not aborted; the two still waiting are',
    );
    assert.equal(h.load.held, 0);
    for (const p of h.asked.slice(1)) p.resolve('late');
    await h.flush();
    await h.send(5);
    assert.deepEqual(h.written, ['a']);
    assert.equal(h.asked.length, 3, 'nothing read after the cancel is submitted');
    assert.equal(h.load.held, 0, 'a write going out after the cancel releases nothing twice');
  });
});
