/**
 * A request as a handler sees it. With decode_input_request (MMS's key, on by default) the body is
 * also decoded once here, so handlers need not parse JSON themselves.
 */
import type { InvokeRequest } from '../protocol/messages';
import type { HandlerRequest } from './context';
import { OIP_MEDIA_TYPE } from '../oip/binary-body';
import { essence, isJson } from './media-types';

export function toHandlerRequest(r: InvokeRequest, decodeInput: boolean): HandlerRequest {
  // Decoded from a frame, a body is always one slice.
  const req: HandlerRequest = {
    body: r.body as Buffer,
    contentType: r.contentType,
    accept: r.accept,
    headers: (r.headers ?? {}) as Record<string, string>,
    requestId: r.requestId,
  };
  if (decodeInput) req.data = decode(req.body, essence(req.contentType));
  return req;
}

/**
 * A JSON body that does not parse stays undefined: the default handler reports why, as a 400. An
 * OIP body (+json, but binary tensors may follow its header) is left to its codec.
 */
function decode(body: Buffer, type: string): unknown {
  if (isJson(type) && type !== OIP_MEDIA_TYPE) {
    try {
      return JSON.parse(body.toString('utf8'));
    } catch {
      return undefined;
    }
  }
  return type.startsWith('text/') ? body.toString('utf8') : undefined;
}
