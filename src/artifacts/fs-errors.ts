import { MmeError } from '../errors';

export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** A full disk is a resource problem SageMaker reacts to (507 makes it unload idle models), not a bad model. */
export function isDiskFull(err: unknown): boolean {
  const code = errnoOf(err);
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** Where a model's files are written, as the operator knows it (never the path itself, which the client sees). */
const kExtractionDir = 'the directory where the server extracts model archives (in TMPDIR)';

/**
 * 507 as SageMaker's contract asks for a lack of any resource (it then unloads idle models, and their
 * extracted files go with them), under its own code: MME_ERR_INSUFFICIENT_MEMORY means memory only.
 */
export function diskFullError(what: string, cause: unknown, dir = kExtractionDir): MmeError {
  const full =
    errnoOf(cause) === 'EDQUOT' ? 'the disk quota is used up (EDQUOT)' : 'no space is left on the disk (ENOSPC)';
  return new MmeError(
    'MME_ERR_INSUFFICIENT_STORAGE',
    `${what} failed: ${full} of ${dir}. Unload a model (DELETE /models/{name}) to free its files, free space there, or give that directory a larger volume.`,
    { cause },
  );
}

/**
 * Maps an unexpected filesystem failure to an MmeError. Only the errno goes in the message: Node's own
 * text carries absolute paths, which do not belong in a client-visible error body.
 */
export function fsFailure(what: string, err: unknown): MmeError {
  if (isDiskFull(err)) return diskFullError(what, err);
  return new MmeError('MME_ERR_LOAD_FAILED', `${what} failed: ${errnoOf(err) ?? String(err)}`, { cause: err });
}
