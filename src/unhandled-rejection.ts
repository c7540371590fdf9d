/**
 * A promise rejection nobody handles is a bug that has already left something undone: a request
 * that will never be answered, state half-updated. The server and every worker process report it,
 * naming the request it belongs to when that is known, and exit with a code of their own, which the
 * server names when a worker ends that way (exit-reason.ts). Node's default (a stack, exit 1) says
 * neither which request nor that this was the cause.
 */
import { capMessage } from './errors';

/** Its own code, so the exit names its cause: 70 is a worker whose onnxruntime failed to start, 1 Node's own. */
export const UNHANDLED_REJECTION_EXIT_CODE = 71;

/** Errors and promises tied to the request(s) they are for. */
const owners = new WeakMap<object, string>();

/**
 * Ties an error or a promise to the x-request-id(s) it is for, so that its rejection, if nobody
 * handles it, names them. An error may also carry its own `requestId` string.
 */
export function forRequest<T>(target: T, requestIds: string): T {
  if (requestIds && typeof target === 'object' && target !== null) owners.set(target, requestIds);
  return target;
}

function requestIdsOf(reason: unknown, promise: Promise<unknown>): string | undefined {
  if (typeof reason === 'object' && reason !== null) {
    const tagged = owners.get(reason);
    if (tagged) return tagged;
    const own = (reason as { requestId?: unknown }).requestId;
    if (typeof own === 'string' && own) return own;
  }
  return owners.get(promise);
}

function describe(reason: unknown): string {
  return capMessage(reason instanceof Error ? (reason.stack ?? `${reason.name}: ${reason.message}`) : String(reason));
}

/** From now on, a rejection nobody handles is logged and ends the process with UNHANDLED_REJECTION_EXIT_CODE. */
export function exitOnUnhandledRejection(log: (line: string) => void): void {
  process.on('unhandledRejection', (reason, promise) => {
    let line: string;
    try {
      const ids = requestIdsOf(reason, promise);
      line = `unhandled promise rejection${ids ? ` (request ${ids})` : ''}: ${describe(reason)}`;
    } catch {
      line = 'unhandled promise rejection (its reason could not be printed)';
    }
    log(`${line}; exiting with code ${UNHANDLED_REJECTION_EXIT_CODE}`);
    process.exit(UNHANDLED_REJECTION_EXIT_CODE);
  });
}
