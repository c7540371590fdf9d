import type { Context, Next } from 'koa';
import { MmeError, isMmeError } from '../errors';
import type { Gateway } from '../gateway/gateway';

/** MMS's error body (plus `errorCode`), or OIP's `{"error"}` under /v2; stacks stay in the server log. */
export function errorResponse(gateway: Pick<Gateway, 'failure'>) {
  return async function errorResponseMiddleware(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new MmeError(
          'MME_ERR_RESOURCE_NOT_FOUND',
          `Requested resource is not found, please refer to API document: ${ctx.method} ${ctx.path}`,
        );
      }
    } catch (err) {
      const e = gateway.failure(
        koaError(err) ?? err,
        ctx.state.requestId as string | undefined,
        `${ctx.method} ${(ctx as Context & { _matchedRoute?: string })._matchedRoute ?? '-'}`,
      );
      ctx.status = e.status;
      ctx.set(e.headers as Record<string, string>);
      ctx.type = 'application/json';
      ctx.body = errorBodyText(e, ctx.path);
    }
  };
}

/** The errors Koa and its router throw themselves (http-errors), as ours. */
function koaError(err: unknown): MmeError | null {
  if (isMmeError(err)) return null;
  const status = (err as { status?: number } | null)?.status;
  if (status === 413) return new MmeError('MME_ERR_PAYLOAD_TOO_LARGE', 'The request body is too large.');
  if (status === 405) return new MmeError('MME_ERR_METHOD_NOT_ALLOWED', (err as Error).message);
  return null;
}

export function methodNotAllowed(): MmeError {
  return new MmeError('MME_ERR_METHOD_NOT_ALLOWED', 'Method not allowed for this resource; see docs/api.md.');
}

export function errorBodyText(e: MmeError, path: string): string {
  const oip = path === '/v2' || path.startsWith('/v2/');
  return JSON.stringify(oip ? { error: e.message } : e.toBody(), null, 2);
}
