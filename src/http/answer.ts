/** How the invoke routes write a model's or an error's answer on node:http. */
import type { ServerResponse } from 'node:http';
import type { MmeError } from '../errors';
import { errorBodyText } from './error-response';

/** Statuses whose answers carry no body (RFC 9110 §15.3.5, §15.3.6, §15.4.5). */
const kNoBody = new Set([204, 205, 304]);
/** Types read as UTF-8 text unless they say otherwise. */
const kTextual = /^(text\/[^;\s]+|application\/json|application\/javascript)$/;

/** "; charset=utf-8" added to text and JSON types that name none; octet-stream for no media type. */
export function answerType(type: string): string {
  const essence = type.split(';', 1)[0].trim().toLowerCase();
  if (!essence.includes('/')) return 'application/octet-stream';
  return kTextual.test(essence) && !/charset=/i.test(type) ? `${type}; charset=utf-8` : type;
}

export function setAnswerHead(
  res: ServerResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  contentType: string,
): void {
  res.statusCode = status;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', answerType(contentType));
}

export function setErrorHead(res: ServerResponse, e: MmeError, path: string): string {
  res.statusCode = e.status;
  for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  return errorBodyText(e, path);
}

/** Ends the response with `body`: nothing is written to a client that is gone, and a status without a body gets none. */
export function send(res: ServerResponse, body: Buffer | string): void {
  if (res.writableEnded || (res.socket !== null && !res.socket.writable)) {
    res.end();
    return;
  }
  if (kNoBody.has(res.statusCode)) {
    for (const h of ['Content-Type', 'Content-Length', 'Transfer-Encoding']) res.removeHeader(h);
    res.end();
    return;
  }
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
