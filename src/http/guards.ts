/**
 * Who may call what, and what is refused before any route runs. A listener on a loopback address
 * serves only requests that name a loopback host (a DNS-rebinding page in a browser sends its own
 * domain), and with management_token set the management API needs it as a bearer token (ShellTorch
 * and ShadowRay were open management APIs), and with inference_token set the data plane needs one of
 * its tokens (health checks stay open). A request that changes state and carries a foreign
 * Origin is refused on every listener (a cross-site page's "simple" POST needs no preflight).
 * Requests with too many headers, and requests arriving during shutdown, are refused outright.
 * Koa's routes and the invoke routes (invoke-route.ts) run the same refusals (refuse()).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Next } from 'koa';
import { MmeError } from '../errors';
import { bearerMatcher, type InferenceToken } from '../gateway/bearer-tokens';
import type { Gateway } from '../gateway/gateway';
import { isLoopback } from '../util/loopback';
import { closeAfterAnswer } from './body';
import { invokePath } from './invoke-paths';

export interface ListenerGuards {
  /** More headers than this is 431 (the listener parses one header more than allowed, so this can tell). */
  maxHeaders: number;
  /** The listener is on a loopback address: refuse requests for other Host names. */
  loopbackOnly: boolean;
  gateway: Pick<Gateway, 'admit'>;
  /** inference_token on this listener's data plane; null = none set, or a management-only listener. */
  inferenceToken: InferenceToken | null;
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
 * Throws what a request is refused with before any route: too many headers (431), shutdown (503),
 * a foreign Host on a loopback listener (403), a foreign Origin on a request that changes state (403),
 * a data-plane request without inference_token (401). The first two end the connection once answered.
 */
export function refuse(req: IncomingMessage, res: ServerResponse, guards: ListenerGuards): void {
  if (req.rawHeaders.length / 2 > guards.maxHeaders) {
    closeAfterAnswer(req, res);
    throw new MmeError('MME_ERR_HEADERS_TOO_LARGE', `The request has more than ${guards.maxHeaders} headers.`);
  }
  try {
    guards.gateway.admit();
  } catch (err) {
    closeAfterAnswer(req, res);
    throw err;
  }
  if (guards.loopbackOnly && !isLoopback(hostName(req))) {
    throw new MmeError(
      'MME_ERR_FORBIDDEN',
      'This listener is bound to a loopback address and serves only requests whose Host is localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding). To serve other hosts, listen on their address (e.g. http://0.0.0.0:8080).',
    );
  }
  if (!originAllowed(req.method, req.headers.origin, req.headers.host)) {
    throw new MmeError('MME_ERR_FORBIDDEN', kCrossSite);
  }
  if (guards.inferenceToken !== null && dataPlane(req.url ?? ''))
    guards.inferenceToken.check(req.headers.authorization, 'Authorization header');
}

/** Health checks answer without inference_token: SageMaker's /ping, OIP's liveness and readiness. */
const kHealthPaths = /^\/(ping|v2\/health\/(live|ready))\/?$/i;
/** The Open Inference Protocol's paths: its metadata and readiness, besides its infer (an invoke path). */
const kOipPaths = /^\/v2(\/|$)/i;

/**
 * Whether a request is for the data plane, which inference_token guards: every invoke path
 * (wherever it is served), and the OIP paths but their health checks. The management API, on a
 * listener that serves both, stays management_token's.
 */
export function dataPlane(url: string): boolean {
  const at = invokePath(url);
  if (at !== null) return true;
  let path: string;
  try {
    path = new URL(url, 'http://h').pathname;
  } catch {
    return true; // no route serves it: guarded all the same
  }
  return kOipPaths.test(path) && !kHealthPaths.test(path);
}

/** The refusals as Koa middleware, for the routes Koa serves. */
export function listenerGuards(guards: ListenerGuards) {
  return async function listenerGuardsMiddleware(ctx: Context, next: Next): Promise<void> {
    refuse(ctx.req, ctx.res, guards);
    await next();
  };
}

const kCrossSite =
  'A request that changes state is not accepted from another site: its Origin header names a page that is not this server. Send it without an Origin (from a server, curl or an SDK), not from a browser page.';

/** Methods a browser sends cross-site only after a preflight, or that change nothing. */
const kSafeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request may change state given its Origin: no Origin (curl, SDKs, SageMaker: nothing
 * but a browser sends one), or the server's own (scheme://host:port equal to the request's Host).
 * A page elsewhere can still send a CORS "simple" request (POST with text/plain or a form body)
 * from a browser on this machine or network, and the Host guard alone does not see it.
 */
export function originAllowed(
  method: string | undefined,
  origin: string | undefined,
  host: string | undefined,
): boolean {
  if (origin === undefined || kSafeMethods.has(method ?? '')) return true;
  try {
    return host !== undefined && new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false; // "null" (a sandboxed or file: page) or anything unparseable
  }
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
