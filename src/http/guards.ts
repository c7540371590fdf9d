/**
 * Who may call what. A listener on a loopback address serves only requests that name a loopback
 * host (a DNS-rebinding page in a browser sends its own domain), and with management_token set the
 * management API needs it as a bearer token (ShellTorch and ShadowRay were open management APIs).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { Context, Next } from 'koa';
import { MmeError } from '../errors';

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
