/**
 * What HTTP refuses before any route runs: too many headers, the gateway's guard, and the
 * management API without management_token (ShellTorch and ShadowRay were open management APIs).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';
import { MmeError } from '../errors';
import { bearerMatcher } from '../gateway/bearer-tokens';
import { pathOf, type DoorGuard, type Knock } from '../gateway/door';
import { closeAfterAnswer } from './body';
import { invokePath } from './invoke-paths';

export interface ListenerGuards {
  /** More headers than this is 431 (the listener parses one header more than allowed, so this can tell). */
  maxHeaders: number;
  door: DoorGuard;
}

/** What the guard sees of a request; more headers than allowed is 431, which ends the connection once answered. */
export function knockOf(req: IncomingMessage, res: ServerResponse, guards: ListenerGuards, dataPlane: boolean): Knock {
  if (req.rawHeaders.length / 2 > guards.maxHeaders) {
    closeAfterAnswer(req, res);
    throw new MmeError('MME_ERR_HEADERS_TOO_LARGE', `The request has more than ${guards.maxHeaders} headers.`);
  }
  const { host, authorization, origin } = req.headers;
  return { operation: req.url ?? '', host, authorization, dataPlane, method: req.method, origin };
}

/** The shutdown's 503 ends the connection once answered. */
export function closeOnShutdown(req: IncomingMessage, res: ServerResponse, err: unknown): void {
  if ((err as MmeError | undefined)?.code === 'MME_ERR_SHUTTING_DOWN') closeAfterAnswer(req, res);
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
    try {
      guards.door.check(knockOf(ctx.req, ctx.res, guards, dataPlane(ctx.req.url ?? '')));
    } catch (err) {
      closeOnShutdown(ctx.req, ctx.res, err);
      throw err;
    }
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
