/** What every transport does the same way with a client's request before it reaches a model. */
import type { Context } from 'koa';
import { CancelToken } from '../util/cancel-token';

/** The Accept a handler sees: the client's, or `defaultAccept` (SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT) when it accepts anything. */
export function acceptOrDefault(accept: string | undefined, defaultAccept: string): string {
  return !accept || accept.trim() === '*/*' ? defaultAccept : accept;
}

/**
 * Cancelled when the client closes its connection before the answer is out: a queued request then
 * costs nothing, and a streaming handler sees context.isCancelled.
 */
export function cancelOnClientClose(ctx: Context): CancelToken {
  const cancel = new CancelToken();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) cancel.cancel();
  });
  return cancel;
}
