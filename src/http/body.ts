import type { IncomingMessage } from 'node:http';
import { MmeError } from '../errors';

function tooLarge(limit: number): MmeError {
  // The rest of the body is never read: closing the connection ends the upload, where keeping it
  // alive would make Node read and discard the whole body first.
  return new MmeError('MME_ERR_PAYLOAD_TOO_LARGE', `The request body is larger than max_request_size (${limit} bytes). Send a smaller payload or raise max_request_size (on SageMaker: SAGEMAKER_MAX_PAYLOAD_IN_MB).`, { headers: { Connection: 'close' } });
}

/**
 * Reads the whole body, refusing before reading past `limit`: a declared Content-Length over the
 * limit is refused without reading at all, and a chunked body is cut off at the limit.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
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
