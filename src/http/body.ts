import type { IncomingMessage, ServerResponse } from 'node:http';
import { MmeError } from '../errors';

/** How long a connection refused with its body unread may go on delivering what the client sends. */
const kLingerMs = 5000;

/**
 * Ends the connection once the answer to a refused request is out, without resetting it. Keeping
 * it alive would make Node read the whole unwanted body; closing it with input unread makes the
 * kernel send RST, and a client still uploading loses the answer. So, like nginx's lingering
 * close: half-close after the response, read and discard until the client closes too, for at most
 * kLingerMs.
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.once('finish', () => {
    req.socket.end();
    req.resume();
    setTimeout(() => req.socket.destroy(), kLingerMs).unref();
  });
}

function tooLarge(http: { req: IncomingMessage; res: ServerResponse }, limit: number): MmeError {
  closeAfterAnswer(http.req, http.res);
  return new MmeError(
    'MME_ERR_PAYLOAD_TOO_LARGE',
    `The request body is larger than max_request_size (${limit} bytes). Send a smaller payload or raise max_request_size (on SageMaker: SAGEMAKER_MAX_PAYLOAD_IN_MB).`,
  );
}

/** The whole body as one buffer (management requests: small JSON). */
export async function readBody(http: { req: IncomingMessage; res: ServerResponse }, limit: number): Promise<Buffer> {
  const chunks = await readBodyChunks(http, limit);
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

/** A socket chunk this large is kept as it is; smaller ones, in a run, are copied together. */
const kSmallPiece = 16 * 1024;
/** The block a run of small chunks is copied into. */
const kBlock = 64 * 1024;

/**
 * A body's pieces, bounded in number by its bytes: socket-sized chunks are kept as they came (no
 * copy), and a run of small ones (a chunked body of a million 1-byte chunks) is copied into 64 KiB
 * blocks. Kept as they came, each would be a Buffer of ~500 bytes of heap and a piece of its own in
 * the write to the worker: O(chunks) memory and work for O(bytes) of payload.
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

  /** The pieces, the open block's bytes included. */
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
 * Reads the whole body, refusing before reading past `limit`: a declared Content-Length over the
 * limit is refused without reading at all, and a chunked body is cut off at the limit. Either way
 * the connection ends once the 413 is out (closeAfterAnswer). The pieces are not joined: an invoke
 * body goes on to its worker as they are (one writev), so this process copies no socket-sized
 * chunk, and their number is bounded by the body's bytes (BodyPieces).
 */
export function readBodyChunks(http: { req: IncomingMessage; res: ServerResponse }, limit: number): Promise<Buffer[]> {
  const { req } = http;
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(http, limit));
  return new Promise((resolve, reject) => {
    const body = new BodyPieces();
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge(http, limit));
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
