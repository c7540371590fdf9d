/** Every request's x-request-id, and the access log line. */
import type { IncomingMessage } from 'node:http';
import type { Context, Next } from 'koa';
import { newRequestId } from '../gateway/gateway';

export function requestId(accessLog: ((line: string) => void) | null) {
  return async function requestIdMiddleware(ctx: Context, next: Next): Promise<void> {
    const id = newRequestId();
    ctx.state.requestId = id;
    ctx.set('x-request-id', id);
    if (!accessLog) return next() as Promise<void>;
    const t0 = performance.now();
    try {
      await next();
    } finally {
      accessLog(accessLine(ctx.req, ctx.status, performance.now() - t0, id));
    }
  };
}

/** MMS's access log shape: /<client>:<port> "<METHOD> <uri> HTTP/<v>" <status> <ms> */
export function accessLine(req: IncomingMessage, status: number, ms: number, id: string): string {
  return `ACCESS /${req.socket.remoteAddress ?? '-'}:${req.socket.remotePort ?? '-'} "${req.method} ${printable(req.url ?? '')} HTTP/${req.httpVersion}" ${status} ${Math.round(ms)} request-id=${id}`;
}

/** A url is client text: control characters escaped and the length capped, so it cannot forge log lines. */
function printable(url: string): string {
  const escaped = JSON.stringify(url).slice(1, -1);
  return escaped.length > kMaxLoggedUrl ? `${escaped.slice(0, kMaxLoggedUrl)}…` : escaped;
}

const kMaxLoggedUrl = 200;
