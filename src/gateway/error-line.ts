/** Every door's error: the MmeError the client gets, logged with the request id. */
import { MmeError, isMmeError } from '../errors';

/** `err` as the MmeError the client gets; anything unexpected is logged whole and becomes a generic 500. */
export function asMmeError(err: unknown, log: (line: string) => void): MmeError {
  if (isMmeError(err)) return err;
  log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
  return new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
}

/**
 * `where` names the call without client text. 4xx messages may echo what the client sent, so the
 * message is logged for server faults only.
 */
export function errorLine(requestId: string | undefined, where: string, shown: string | number, e: MmeError): string {
  return `request ${requestId ?? '-'} ${where}: ${shown} ${e.code}${e.status >= 500 ? ` ${e.message}` : ''}`;
}
