/**
 * Streaming back-pressure end to end: a client that stops reading stops the handler (it waits in
 * context.drained) instead of filling the server's memory; when it reads again, every byte arrives.
 * A handler that ignores it fails its own request at max_stream_buffer.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { loadModel } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

/** Streams `chunks` × `chunkBytes`; between chunks it awaits drained() (unless told not to) and reports how far it got. */
const producer = `exports.streaming = true;
const fs = require('node:fs');
exports.handle = async (requests, ctx) => {
  const cmd = JSON.parse(requests[0].body.toString());
  const chunk = Buffer.alloc(cmd.chunkBytes, 97);
  for (let n = 1; n <= cmd.chunks; n++) {
    if (!ctx.sendIntermediate(0, chunk)) return ['cancelled'];
    if (!cmd.await) continue;
    let ready = false;
    const drained = ctx.drained(0).then(() => { ready = true; });
    await null;
    if (!ready) fs.writeFileSync(cmd.progress, String(n));
    await drained;
  }
  fs.writeFileSync(cmd.done, 'done');
  return ['end'];
};
`;

const kChunk = 16 * 1024;
const kChunks = 4096; // 64 MiB: far more than loopback socket buffers hold, so a handler without back-pressure would finish

describe('streaming back-pressure', () => {
  let t: TestServer;
  let dir: string;
  before(async () => {
    t = await startTestServer('max_stream_buffer=262144');
    assert.equal(
      (await loadModel(t, 'producer', writeModelDir(t.store, 'producer', addModel(), { 'handler.js': producer })))
        .status,
      200,
    );
    dir = tempDir('mme-stream-');
  });
  after(() => t.close());

  it('a client that stops reading stops the handler; when it resumes, every byte arrives', async function () {
    this.timeout(180_000);
    const progress = path.join(dir, 'progress');
    const done = path.join(dir, 'done');
    let received = 0;
    let paused!: http.IncomingMessage;
    const finished = new Promise<boolean>((resolve, reject) => {
      const req = http.request(
        `${t.url}/models/producer/invoke`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          paused = res;
          res.pause(); // reads nothing: the kernel's buffers fill, then the server's write callbacks stop
          res.on('data', (c: Buffer) => (received += c.length));
          res.on('close', () => resolve(res.complete));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ chunkBytes: kChunk, chunks: kChunks, await: true, progress, done }));
    });
    // The handler ends up waiting for acknowledgements that do not come. How far it gets first depends
    // on the kernel's socket buffers, so wait until its progress stops moving; a slow machine can only
    // make this pass later, never fail.
    await waitFor(() => fs.existsSync(progress), 'the handler to wait for a slow client', 60_000);
    let last = -1;
    let still = 0;
    await waitFor(
      () => {
        const n = Number(fs.readFileSync(progress, 'utf8'));
        still = n === last ? still + 1 : 0;
        last = n;
        return still >= 10;
      },
      'the handler to stop sending',
      60_000,
      100,
    );
    const sentWhilePaused = last;
    assert.ok(sentWhilePaused < kChunks, `the handler sent all ${kChunks} chunks to a client that read nothing`);
    assert.ok(!fs.existsSync(done), 'the handler finished while the client read nothing');
    paused.resume();
    assert.equal(await finished, true, t.logs.slice(-5).join('\n'));
    assert.equal(received, kChunk * kChunks + 'end'.length);
    assert.ok(fs.existsSync(done));
  });

  it('a handler that ignores drained() fails its request at max_stream_buffer, with a message saying what to do', async () => {
    let response!: http.IncomingMessage;
    const closed = new Promise<boolean>((resolve, reject) => {
      const req = http.request(
        `${t.url}/models/producer/invoke`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (r) => {
          response = r;
          r.pause();
          r.on('error', () => undefined);
          r.on('close', () => resolve(r.complete));
        },
      );
      req.on('error', reject);
      req.end(
        JSON.stringify({
          chunkBytes: kChunk,
          chunks: kChunks,
          await: false,
          progress: path.join(dir, 'p2'),
          done: path.join(dir, 'd2'),
        }),
      );
    });
    // The log line and the response's head come by two ways (a pipe, a socket): either may be read first.
    await waitFor(
      () =>
        response !== undefined && t.logs.some((l) => /max_stream_buffer is 262144; await context.drained\(0\)/.test(l)),
      'the response head and the handler error in the log',
    );
    // The bytes sent before the failure still sit in the socket ahead of its end: read them, then see the cut.
    response.resume();
    // The head went out with the first chunk: an unfinished chunked body is the failure signal.
    assert.equal(await closed, false);
  });
});
