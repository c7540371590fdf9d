/**
 * What HTTP refuses before any route runs: requests with too many headers, then the gateway's
 * guard (door-guard.ts: shutdown, a foreign Host on a loopback listener, a foreign Origin, the data
 * plane without inference_token), and the management API without management_token (ShellTorch and
 * ShadowRay were open management APIs). Koa's routes and the invoke routes (invoke-route.ts) run
 * the same refusals (refuse()).
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
  /** The gateway's guard for this listener. */
  door: DoorGuard;
}

/**
 * The host name a request's Host header names: the first of a list, an IPv6 address with its
 * brackets, '' for none.
 */
export function hostName(req: IncomingMessage): string {
  const host = (req.headers.host ?? '').split(',', 1)[0].trim();
  if (host[0] !== '[') return host.split(':', 1)[0];
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return '';
  }
}

/**
 * Throws what a request is refused with before any route: too many headers (431), then the
 * gateway's refusals. The 431 and the shutdown's 503 end the connection once answered. An invoke
 * route knows its request is for the data plane (`forDataPlane`).
 */
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

/** The Open Inference Protocol's paths: its metadata, readiness and health checks, besides its infer (an invoke path). */
const kOipPaths = /^\/v2(\/|$)/i;

/**
 * Whether a request is for the data plane, which inference_token guards (its health checks
 * excepted): every invoke path (wherever it is served), and the OIP paths. The management API, on
 * a listener that serves both, stays management_token's.
 */
function dataPlane(url: string): boolean {
  if (invokePath(url) !== null) return true;
  const path = pathOf(url);
  return path === null || kOipPaths.test(path); // no route serves an unparseable one: guarded all the same
}

/** The refusals as Koa middleware, for the routes Koa serves. */
export function listenerGuards(guards: ListenerGuards) {
  return async function listenerGuardsMiddleware(ctx: Context, next: Next): Promise<void> {
    refuse(ctx.req, ctx.res, guards);
    await next();
  };
}

/** management_token on the management routes, compared in constant time; `refused` counts each refusal. */
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
