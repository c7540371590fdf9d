import type { Context, Next } from 'koa';
import { MmeError, isMmeError } from '../errors';
import { isOipPath, oipErrorBody } from './v2-routes';

/**
 * Turns every thrown error into MMS's body `{"code","type","message"}` (plus our stable
 * `errorCode`), or under /v2 the Open Inference Protocol's `{"error"}`. Unknown errors become a
 * generic 500: stacks and paths stay in the server log.
 */
export function errorResponse(log: (line: string) => void) {
  return async function errorResponseMiddleware(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new MmeError('MME_ERR_RESOURCE_NOT_FOUND', `Requested resource is not found, please refer to API document: ${ctx.method} ${ctx.path}`);
      }
    } catch (err) {
      const e = asMmeError(err, log);
      log(errorLine(ctx.state.requestId as string | undefined, ctx.method, (ctx as Context & { _matchedRoute?: string })._matchedRoute, e));
      ctx.status = e.status;
      ctx.set(e.headers as Record<string, string>);
      ctx.type = 'application/json';
      ctx.body = errorBodyText(e, ctx.path);
    }
  };
}

/**
 * Every error is logged with its request id, so a client's report can be found in the log. Client
 * text never reaches the log (names, paths and 4xx messages may echo it): the route pattern and,
 * for server faults only, the message, which the server wrote about names it has validated.
 */
export function errorLine(requestId: string | undefined, method: string, route: string | undefined, e: MmeError): string {
  return `request ${requestId ?? '-'} ${method} ${route ?? '-'}: ${e.status} ${e.code}${e.status >= 500 ? ` ${e.message}` : ''}`;
}

/** The error body a client gets for `path`: OIP's under /v2, MMS's elsewhere. */
export function errorBodyText(e: MmeError, path: string): string {
  return JSON.stringify(isOipPath(path) ? oipErrorBody(e) : e.toBody(), null, 2);
}

/** `err` as the MmeError the client is answered with; anything unexpected is logged and becomes a generic 500. */
export function asMmeError(err: unknown, log: (line: string) => void): MmeError {
  if (isMmeError(err)) return err;
  const status = (err as { status?: number }).status;
  if (status === 413) return new MmeError('MME_ERR_PAYLOAD_TOO_LARGE', 'The request body is too large.');
  if (status === 405) return new MmeError('MME_ERR_METHOD_NOT_ALLOWED', (err as Error).message);
  log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
  return new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
}
