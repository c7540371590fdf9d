/**
 * What HTTP refuses before any route runs: too many headers, the gateway's guard, and the
 * management API without management_token (ShellTorch and ShadowRay were open management APIs).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';
import { MmeError } from '../errors';
import { bearerMatcher } from '../gateway/bearer-tokens';
import { pathOf, type DoorGuard } from '../gateway/door-guard';
import { closeAfterAnswer } from './body';
import { invokePath } from './invoke-paths';

export interface ListenerGuards {
  /** More headers than this is 431 (the listener parses one header more than allowed, so this can tell). */
  maxHeaders: number;
  door: DoorGuard;
}

/** The first of a list, an IPv6 address with its brackets, '' for none. */
export function hostName(req: IncomingMessage): string {
  const host = (req.headers.host ?? '').split(',', 1)[0].trim();
  if (host[0] !== '[') return host.split(':', 1)[0];
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return '';
  }
}

/** The 431 and the shutdown's 503 end the connection once answered. */
export function refuse(req: IncomingMessage, res: ServerResponse, guards: ListenerGuards, forDataPlane = false): void {
  if (req.rawHeaders.length / 2 > guards.maxHeaders) {
    closeAfterAnswer(req, res);
    throw new MmeError('MME_ERR_HEADERS_TOO_LARGE', `The request has more than ${guards.maxHeaders} headers.`);
  }
  const url = req.url ?? '';
  try {
    guards.door.check({
      operation: url,
      host: hostName(req),
      authorization: req.headers.authorization,
      dataPlane: forDataPlane || dataPlane(url),
      method: req.method,
      origin: req.headers.origin,
      hostHeader: req.headers.host,
    });
  } catch (err) {
    if ((err as MmeError).code === 'MME_ERR_SHUTTING_DOWN') closeAfterAnswer(req, res);
    throw err;
  }
}

const kOipPaths = /^\/v2(\/|$)/i;

/** Every invoke path and the OIP paths; the management API on the same listener stays management_token's. */
function dataPlane(url: string): boolean {
  if (invokePath(url) !== null) return true;
  const path = pathOf(url);
  return path === null || kOipPaths.test(path); // no route serves an unparseable one: guarded all the same
}

export function listenerGuards(guards: ListenerGuards) {
  return async function listenerGuardsMiddleware(ctx: Context, next: Next): Promise<void> {
    refuse(ctx.req, ctx.res, guards);
    await next();
  };
}

/** Compared in constant time. */
export function bearerToken(token: string, refused: () => void) {
  const matches = bearerMatcher([token]);
  return async function bearerTokenMiddleware(ctx: Context, next: Next): Promise<void> {
    if (!matches(ctx.get('authorization'))) {
      refused();
      throw new MmeError('MME_ERR_UNAUTHORIZED', 'The management API needs Authorization: Bearer <management_token>.', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    await next();
  };
}
