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
  return new MmeError('MME_ERR_PAYLOAD_TOO_LARGE', `The request body is larger than max_request_size (${limit} bytes). Send a smaller payload or raise max_request_size (on SageMaker: SAGEMAKER_MAX_PAYLOAD_IN_MB).`);
}

/** The whole body as one buffer (management requests: small JSON). */
export async function readBody(http: { req: IncomingMessage; res: ServerResponse }, limit: number): Promise<Buffer> {
  const chunks = await readBodyChunks(http, limit);
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

/**
 * Reads the whole body as the socket delivered it, refusing before reading past `limit`: a
 * declared Content-Length over the limit is refused without reading at all, and a chunked body is
 * cut off at the limit. Either way the connection ends once the 413 is out (closeAfterAnswer).
 * The pieces are not joined: an invoke body goes on to its worker as they are (one writev), so
 * this process never copies a payload.
 */
export function readBodyChunks(http: { req: IncomingMessage; res: ServerResponse }, limit: number): Promise<Buffer[]> {
  const { req } = http;
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(http, limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge(http, limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks);
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
