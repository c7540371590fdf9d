/** Which names can be models', and the errors every route gives about a name. */
import { MmeError, quote } from '../../errors';

/** Model names become directory names in model_store and log fields: a safe alphabet only. */
const kModelName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

export const isModelName = (name: string) => kModelName.test(name) && !name.includes('..');

export function checkModelName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0)
    throw new MmeError('MME_ERR_BAD_REQUEST', 'Parameter model_name is required.');
  if (!isModelName(name)) {
    throw new MmeError(
      'MME_ERR_BAD_REQUEST',
      `model_name ${quote(name)} is not valid: use 1-255 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return name;
}

/** A name that could be a model's is shown as MMS shows it; any other is client text, quoted. */
export const modelNotFound = (name: string) =>
  new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${isModelName(name) ? name : quote(name)}`);
export const shuttingDown = () => new MmeError('MME_ERR_SHUTTING_DOWN', 'The server is shutting down.');
