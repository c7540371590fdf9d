import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { rawExchange } from '../../harness/raw-http';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { FREE_CHUNKS, MIN_CHUNK_BYTES, readBodyChunks } from '../../src/http/body';
import type { MmeError } from '../../src/errors';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** What the server saw of a refused body once its connection closed. */
interface Refused {
  /** Bytes the parser had handed to the request but nobody read: what it parsed after the refusal. */
  parsedAfter: number;
  /** Bytes read from the socket in all. */
  bytesRead: number;
}

/** A server that reads each body with readBodyChunks and answers how it kept it, or the refusal's code. */
async function pieceServer(
  limit: number,
): Promise<{ port: number; refusals: EventEmitter; close: () => Promise<void> }> {
  /** 'refused' with a Refused once a refused request's connection has closed. */
  const refusals = new EventEmitter();
  const server = http.createServer((req, res) => {
    readBodyChunks({ req, res }, limit).then(
      (pieces) =>
        res.end(
          JSON.stringify({
            pieces: pieces.length,
            bytes: pieces.reduce((n, p) => n + p.length, 0),
            sha: sha(Buffer.concat(pieces)),
          }),
        ),
      (err: MmeError) => {
        req.socket.on('close', () =>
          refusals.emit('refused', { parsedAfter: req.readableLength, bytesRead: req.socket.bytesRead }),
        );
        res.statusCode = err.status;
        res.end(JSON.stringify({ errorCode: err.code, message: err.message }));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    refusals,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A chunked POST to `path` whose body is `chunks`, one HTTP chunk each. */
function chunkedRequest(chunks: Buffer[], path = '/', headers = 'Connection: close\r\n'): Buffer {
  const framed: Buffer[] = [
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}Transfer-Encoding: chunked\r\n\r\n`),
  ];
  for (const c of chunks) framed.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
  framed.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(framed);
}

/** `n` one-byte chunks of `body` (spaces past its end). */
const oneByteChunks = (n: number, body = '') =>
  Array.from({ length: n }, (_, i) => Buffer.from(i < body.length ? body[i] : ' '));

/** POSTs `chunks` as one chunked body, written to the socket as they are (one HTTP chunk each). */
function postChunked(port: number, chunks: Buffer[]): Promise<{ pieces: number; bytes: number; sha: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.end(chunkedRequest(chunks));
    const answer: Buffer[] = [];
    socket.on('data', (d) => answer.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(answer).toString();
      resolve(
        JSON.parse(
          text
            .slice(text.indexOf('\r\n\r\n') + 4)
            .replace(/^[0-9a-f]+\r\n/, '')
            .replace(/\r\n0\r\n\r\n$/, ''),
        ),
      );
    });
  });
}

describe('HTTP body reader', () => {
  let server: Awaited<ReturnType<typeof pieceServer>>;
  before(async () => {
    server = await pieceServer(8 * 2 ** 20);
  });
  after(() => server.close());

  it('keeps a body of 20 000 64-byte chunks as a few 64 KiB pieces, byte for byte', async () => {
    const chunks = Array.from({ length: 20_000 }, (_, i) => Buffer.alloc(64, i % 251));
    const got = await postChunked(server.port, chunks);
    assert.equal(got.bytes, 64 * chunks.length);
    assert.equal(got.sha, sha(Buffer.concat(chunks)));
    assert.ok(got.pieces <= Math.ceil(got.bytes / (64 * 1024)) + 1, `${got.pieces} pieces for ${got.bytes} bytes`);
  });

  it('keeps large chunks as they came between runs of small ones, in order', async () => {
    const small = (n: number, at: number) => Array.from({ length: n }, (_, i) => Buffer.from([(at + i) % 256]));
    const chunks = [
      ...small(1000, 0),
      Buffer.alloc(40_000, 7),
      ...small(10, 3),
      Buffer.alloc(17_000, 9),
      Buffer.from('x'),
    ];
    const got = await postChunked(server.port, chunks);
    assert.equal(got.sha, sha(Buffer.concat(chunks)));
    assert.ok(got.pieces <= 5, `${got.pieces} pieces`);
  });

  it('keeps a one-chunk body as one piece', async () => {
    const got = await postChunked(server.port, [Buffer.from('{"a":1}')]);
    assert.deepEqual([got.pieces, got.bytes], [1, 7]);
  });

  it(`takes ${FREE_CHUNKS} one-byte chunks, and any number of chunks of ${MIN_CHUNK_BYTES} bytes`, async () => {
    const tiny = oneByteChunks(FREE_CHUNKS);
    assert.equal((await postChunked(server.port, tiny)).sha, sha(Buffer.concat(tiny)));
    const even = Array.from({ length: 30_000 }, () => Buffer.alloc(MIN_CHUNK_BYTES, 1));
    assert.equal((await postChunked(server.port, even)).bytes, 30_000 * MIN_CHUNK_BYTES);
  });

  it(`refuses a chunked body once its chunks pass ${FREE_CHUNKS} plus one per ${MIN_CHUNK_BYTES} bytes: 400 MME_ERR_BODY_CHUNKS_TOO_SMALL, saying to send larger chunks or a Content-Length`, async () => {
    const got = await rawExchange(server.port, chunkedRequest(oneByteChunks(FREE_CHUNKS + 100)));
    const res = got.responses[0];
    assert.equal(res.status, 400);
    const body = JSON.parse(res.body.toString()) as { errorCode: string; message: string };
    assert.equal(body.errorCode, 'MME_ERR_BODY_CHUNKS_TOO_SMALL');
    assert.match(body.message, /larger chunks .* or with a Content-Length/);
  });

  it('stops parsing a refused body: the rest of 300 000 one-byte chunks is read as raw bytes and dropped, the answer comes first, the connection ends', async () => {
    const refused = once(server.refusals, 'refused') as Promise<[Refused]>;
    // Keep-alive: a request that says Connection: close has its connection destroyed by Node once the answer is out.
    const request = chunkedRequest(oneByteChunks(300_000), '/', '');
    const got = await rawExchange(server.port, request, { timeoutMs: 60_000 });
    assert.equal(got.responses[0]?.status, 400);
    assert.ok(got.closed, 'the server closed the connection');
    const [seen] = await refused;
    // The parser finishes the socket read it is in (at most 64 KiB) and parses nothing after it.
    assert.ok(seen.parsedAfter <= 64 * 1024, `${seen.parsedAfter} bytes parsed after the refusal`);
    assert.equal(seen.bytesRead, request.length, 'the client could send its whole body (nothing reset)');
  });
});

describe('HTTP body reader on every route that reads a body', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
    const dir = writeModelDir(t.store, 'add', addModel());
    assert.equal((await rawExchange(Number(new URL(t.url).port), loadRequest(dir))).responses[0]?.status, 200);
  });
  after(async () => {
    await t.close();
  });

  const loadRequest = (dir: string) =>
    `POST /models?model_name=add&url=${encodeURIComponent(dir)} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`;
  const port = () => Number(new URL(t.url).port);
  const json = JSON.stringify({ inputs: { x: [Array.from({ length: 16 }, (_, j) => j)] } });

  for (const [door, path] of [
    ['the invoke route', '/models/add/invoke'],
    ['/v2 infer', '/v2/models/add/infer'],
    ['management (Koa)', '/models'],
  ] as const) {
    it(`${door} refuses a body of one-byte chunks with 400 MME_ERR_BODY_CHUNKS_TOO_SMALL`, async () => {
      const got = await rawExchange(
        port(),
        chunkedRequest(oneByteChunks(20_000, json), path, 'Content-Type: application/json\r\n'),
      );
      assert.equal(got.responses[0]?.status, 400, got.responses[0]?.body.toString());
      assert.match(got.responses[0].body.toString(), /in larger chunks .* or with a Content-Length/);
    });
  }

  it('the invoke route answers the same body in 64-byte chunks as in one piece', async () => {
    const body = Buffer.from(json.padEnd(4096, ' '));
    const pieces = Array.from({ length: body.length / 64 }, (_, i) => body.subarray(64 * i, 64 * (i + 1)));
    const [chunked, whole] = await Promise.all([
      rawExchange(port(), chunkedRequest(pieces, '/models/add/invoke', 'Content-Type: application/json\r\n'), {
        responses: 1,
      }),
      rawExchange(port(), chunkedRequest([body], '/models/add/invoke', 'Content-Type: application/json\r\n'), {
        responses: 1,
      }),
    ]);
    assert.equal(whole.responses[0]?.status, 200);
    assert.deepEqual(chunked.responses[0]?.body, whole.responses[0]?.body);
  });
});
