import { MmeError } from '../errors';

export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** A full disk is a resource problem SageMaker reacts to (507 makes it unload idle models), not a bad model. */
export function isDiskFull(err: unknown): boolean {
  const code = errnoOf(err);
  return code === 'ENOSPC' || code === 'EDQUOT';
}

export function diskFullError(what: string, cause: unknown): MmeError {
  return new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `No space left on device: the disk is full, so ${what} failed`, {
    cause,
  });
}

/**
 * Maps an unexpected filesystem failure to an MmeError. Only the errno goes in the message: Node's own
 * text carries absolute paths, which do not belong in a client-visible error body.
 */
export function fsFailure(what: string, err: unknown): MmeError {
  if (isDiskFull(err)) return diskFullError(what, err);
  return new MmeError('MME_ERR_LOAD_FAILED', `${what} failed: ${errnoOf(err) ?? String(err)}`, { cause: err });
}
