/**
 * Who may call what, and what is refused before any route runs. A listener on a loopback address
 * serves only requests that name a loopback host (a DNS-rebinding page in a browser sends its own
 * domain), and with management_token set the management API needs it as a bearer token (ShellTorch
 * and ShadowRay were open management APIs). A request that changes state and carries a foreign
 * Origin is refused on every listener (a cross-site page's "simple" POST needs no preflight).
 * Requests with too many headers, and requests arriving during shutdown, are refused outright.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { Context, Next } from 'koa';
import { MmeError } from '../errors';
import { closeAfterAnswer } from './body';

const kLoopbackNames = new Set(['localhost', 'localhost.']);

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (kLoopbackNames.has(h) || h === '::1') return true;
  return net.isIPv4(h) && h.startsWith('127.');
}

export function loopbackHostGuard() {
  return async function loopbackHostGuardMiddleware(ctx: Context, next: Next): Promise<void> {
    if (!isLoopback(ctx.hostname)) {
      throw new MmeError('MME_ERR_FORBIDDEN', 'This listener is bound to a loopback address and serves only requests whose Host is localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding). To serve other hosts, listen on their address (e.g. http://0.0.0.0:8080).');
    }
    await next();
  };
}

/** Methods a browser sends cross-site only after a preflight, or that change nothing. */
const kSafeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request may change state given its Origin: no Origin (curl, SDKs, SageMaker: nothing
 * but a browser sends one), or the server's own (scheme://host:port equal to the request's Host).
 * A page elsewhere can still send a CORS "simple" request (POST with text/plain or a form body)
 * from a browser on this machine or network, and the Host guard alone does not see it.
 */
export function originAllowed(method: string | undefined, origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined || kSafeMethods.has(method ?? '')) return true;
  try {
    return host !== undefined && new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false; // "null" (a sandboxed or file: page) or anything unparseable
  }
}

export function crossSiteGuard() {
  return async function crossSiteGuardMiddleware(ctx: Context, next: Next): Promise<void> {
    if (!originAllowed(ctx.method, ctx.get('origin') || undefined, ctx.get('host') || undefined)) {
      throw new MmeError('MME_ERR_FORBIDDEN', 'A request that changes state is not accepted from another site: its Origin header names a page that is not this server. Send it without an Origin (from a server, curl or an SDK), not from a browser page.');
    }
    await next();
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time bearer check: both sides are hashed first, so lengths never differ. */
export function bearerToken(token: string) {
  const expected = digest(token);
  return async function bearerTokenMiddleware(ctx: Context, next: Next): Promise<void> {
    const m = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'));
    if (!m || !timingSafeEqual(digest(m[1].trim()), expected)) {
      throw new MmeError('MME_ERR_UNAUTHORIZED', 'The management API needs Authorization: Bearer <management_token>.', { headers: { 'WWW-Authenticate': 'Bearer' } });
    }
    await next();
  };
}

/** More than `max` headers is 431 (the listener parses one header more than allowed, so this can tell). */
export function headerCountGuard(max: number) {
  return async function headerCountGuardMiddleware(ctx: Context, next: Next): Promise<void> {
    if (ctx.req.rawHeaders.length / 2 > max) {
      closeAfterAnswer(ctx.req, ctx.res);
      throw new MmeError('MME_ERR_HEADERS_TOO_LARGE', `The request has more than ${max} headers.`);
    }
    await next();
  };
}

/**
 * During shutdown, requests that still arrive on open connections get 503 (and the connection is
 * closed) while admitted ones finish: a 404 would tell SageMaker the model is gone from this host.
 */
export function refuseWhileClosing(isClosing: () => boolean) {
  return async function refuseWhileClosingMiddleware(ctx: Context, next: Next): Promise<void> {
    if (isClosing()) {
      closeAfterAnswer(ctx.req, ctx.res);
      throw new MmeError('MME_ERR_SHUTTING_DOWN', 'The server is shutting down; send the request to another instance.');
    }
    await next();
  };
}
