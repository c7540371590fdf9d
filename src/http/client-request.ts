/** What every transport does the same way with a client's request before it reaches a model. */
import type { ServerResponse } from 'node:http';
import { CancelToken } from '../util/cancel-token';

/** The Accept a handler sees: the client's, or `defaultAccept` (SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT) when it accepts anything. */
export function acceptOrDefault(accept: string | undefined, defaultAccept: string): string {
  return !accept || accept.trim() === '*/*' ? defaultAccept : accept;
}

/**
 * Cancelled when the client closes its connection before the answer is out: a queued request then
 * costs nothing, and a streaming handler sees context.isCancelled.
 */
export function cancelOnClientClose(res: ServerResponse): CancelToken {
  const cancel = new CancelToken();
  res.once('close', () => {
    if (!res.writableFinished) cancel.cancel();
  });
  return cancel;
}
