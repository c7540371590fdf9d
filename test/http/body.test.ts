import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readBodyChunks } from '../../src/http/body';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A server that reads each body with readBodyChunks and answers how it kept it. */
async function pieceServer(limit: number): Promise<{ port: number; close: () => Promise<void> }> {
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
      (err: Error) => {
        res.statusCode = 413;
        res.end(err.message);
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** POSTs `chunks` as one chunked body, written to the socket as they are (one HTTP chunk each). */
function postChunked(port: number, chunks: Buffer[]): Promise<{ pieces: number; bytes: number; sha: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const framed: Buffer[] = [
      Buffer.from('POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n'),
    ];
    for (const c of chunks) framed.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
    framed.push(Buffer.from('0\r\n\r\n'));
    socket.end(Buffer.concat(framed));
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

  it('keeps a body of 200 000 one-byte chunks as a few 64 KiB pieces, byte for byte', async () => {
    const chunks = Array.from({ length: 200_000 }, (_, i) => Buffer.from([i % 251]));
    const got = await postChunked(server.port, chunks);
    assert.equal(got.bytes, chunks.length);
    assert.equal(got.sha, sha(Buffer.concat(chunks)));
    assert.ok(
      got.pieces <= Math.ceil(chunks.length / (64 * 1024)) + 1,
      `${got.pieces} pieces for ${chunks.length} bytes`,
    );
  });

  it('keeps large chunks as they came between runs of small ones, in order', async () => {
    const small = (n: number, at: number) => Array.from({ length: n }, (_, i) => Buffer.from([(at + i) % 256]));
    const chunks = [
      ...small(3000, 0),
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
});
