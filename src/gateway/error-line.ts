/**
 * What every door does with an error: turn it into the MmeError the client is answered with, and
 * log it with the request id, so that a client's report can be found in the log.
 */
import { MmeError, isMmeError } from '../errors';

/** `err` as the MmeError the client gets; anything unexpected is logged whole and becomes a generic 500. */
export function asMmeError(err: unknown, log: (line: string) => void): MmeError {
  if (isMmeError(err)) return err;
  log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
  return new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
}

/**
 * `where` names the call without client text ("POST /models/:name/invoke", "grpc ModelInfer"), and
 * `shown` is the status as the door answered it. Names, paths and 4xx messages may echo what the
 * client sent, so the message is logged for server faults only: the server wrote it, about names
 * it has validated.
 */
export function errorLine(requestId: string | undefined, where: string, shown: string | number, e: MmeError): string {
  return `request ${requestId ?? '-'} ${where}: ${shown} ${e.code}${e.status >= 500 ? ` ${e.message}` : ''}`;
}
