import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { MmeError } from '../errors';

/** How long a connection refused with its body unread may go on delivering what the client sends. */
const kLingerMs = 5000;

/**
 * Like nginx's lingering close: keeping the connection alive would read the whole unwanted body,
 * closing it with input unread sends RST and a client still uploading loses the answer. The rest
 * is read as raw socket reads, never through Node's HTTP parser (one JS call per chunk).
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  discardInput(req.socket);
  res.once('finish', () => {
    req.socket.end();
    setTimeout(() => req.socket.destroy(), kLingerMs).unref();
  });
}

/**
 * Node's server unhooks its parser from a socket that gets a 'data' listener of its own once the
 * parser's own feed is gone; what the parser holds already it still hands over.
 */
function discardInput(socket: Socket): void {
  socket.removeAllListeners('data');
  socket.on('data', () => {});
}

function tooLarge(http: { req: IncomingMessage; res: ServerResponse }, limit: number): MmeError {
  closeAfterAnswer(http.req, http.res);
  return new MmeError(
    'MME_ERR_PAYLOAD_TOO_LARGE',
    `The request body is larger than max_request_size (${limit} bytes). Send a smaller payload or raise max_request_size (on SageMaker: SAGEMAKER_MAX_PAYLOAD_IN_MB).`,
  );
}

export async function readBody(http: { req: IncomingMessage; res: ServerResponse }, limit: number): Promise<Buffer> {
  const chunks = await readBodyChunks(http, limit);
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

/** Chunks a chunked body may come in whatever their size: every small body, however it is split. */
export const FREE_CHUNKS = 1024;
/** Past FREE_CHUNKS, the bytes a chunk must carry on average (curl, SDKs, browsers and proxies send KiBs). */
export const MIN_CHUNK_BYTES = 64;

/**
 * Node hands each chunk of a chunked body to JS on its own: a million 1-byte chunks are seconds of
 * the event loop. This keeps a body's work proportional to its bytes.
 */
export function tooManyChunks(chunks: number, bytes: number): boolean {
  return chunks > FREE_CHUNKS + bytes / MIN_CHUNK_BYTES;
}

function chunksTooSmall(http: { req: IncomingMessage; res: ServerResponse }, chunks: number, bytes: number): MmeError {
  closeAfterAnswer(http.req, http.res);
  return new MmeError(
    'MME_ERR_BODY_CHUNKS_TOO_SMALL',
    `The chunked request body came in ${chunks} chunks for ${bytes} bytes; past ${FREE_CHUNKS} chunks they must average at least ${MIN_CHUNK_BYTES} bytes. Send the body in larger chunks (a few KiB each) or with a Content-Length.`,
  );
}

/** A socket chunk this large is kept as it is; smaller ones, in a run, are copied together. */
const kSmallPiece = 16 * 1024;
const kBlock = 64 * 1024;

/**
 * A body's pieces, bounded in number by its bytes: a run of small chunks is copied into blocks, as
 * each kept alone would cost ~500 bytes of heap and a piece of its own in the write to the worker.
 */
class BodyPieces {
  readonly pieces: Buffer[] = [];
  private block: Buffer | null = null;
  private used = 0;

  add(chunk: Buffer): void {
    if (chunk.length >= kSmallPiece) {
      this.seal();
      this.pieces.push(chunk);
      return;
    }
    if (this.block !== null && this.used + chunk.length <= this.block.length) {
      chunk.copy(this.block, this.used);
      this.used += chunk.length;
      return;
    }
    this.seal();
    // A lone small chunk (most bodies) is kept as it is; a second one in a row starts a block.
    const last = this.pieces.at(-1);
    if (last === undefined || last.length >= kSmallPiece) {
      this.pieces.push(chunk);
      return;
    }
    this.pieces.pop();
    this.block = Buffer.allocUnsafe(kBlock);
    last.copy(this.block, 0);
    chunk.copy(this.block, last.length);
    this.used = last.length + chunk.length;
  }

  done(): Buffer[] {
    this.seal();
    return this.pieces;
  }

  private seal(): void {
    if (this.block === null) return;
    this.pieces.push(this.block.subarray(0, this.used));
    this.block = null;
  }
}

/**
 * Refuses before reading past `limit`, the connection ending once the 413 is out. The pieces are
 * not joined: an invoke body goes on to its worker as they are (one writev).
 */
export function readBodyChunks(http: { req: IncomingMessage; res: ServerResponse }, limit: number): Promise<Buffer[]> {
  const { req } = http;
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(http, limit));
  return new Promise((resolve, reject) => {
    const body = new BodyPieces();
    const chunked = req.headers['transfer-encoding'] !== undefined;
    let size = 0;
    let chunks = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      chunks++;
      const refusal =
        size > limit
          ? tooLarge(http, limit)
          : chunked && tooManyChunks(chunks, size)
            ? chunksTooSmall(http, chunks, size)
            : null;
      if (refusal) {
        cleanup();
        req.pause();
        reject(refusal);
        return;
      }
      body.add(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(body.done());
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new MmeError('MME_ERR_BAD_REQUEST', `could not read the request body: ${err.message}`));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
