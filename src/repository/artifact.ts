/**
 * A model from model_repository as a ModelArtifact: the disk cache's copy, resolved like any
 * local model, holding its place in the disk cache until disposed (unloaded). Errors name the
 * repository url, never the cache path.
 */
import { resolveArtifact, type ModelArtifact, type ResolveArtifactOptions } from '../artifacts/model-artifact';
import { isMmeError, MmeError } from '../errors';
import type { ModelRepository } from './repository';

export async function repositoryArtifact(
  repo: ModelRepository,
  name: string,
  opts: ResolveArtifactOptions,
  signal: AbortSignal,
): Promise<ModelArtifact> {
  const fetched = await repo.fetch(name, signal);
  const url = repo.urlOf(name);
  try {
    // No model_roots check: the path is the cache's own, built from a checked name.
    const artifact = await resolveArtifact(fetched.path, { ...opts, roots: undefined });
    return {
      ...artifact,
      url,
      dispose: async () => {
        await artifact.dispose();
        fetched.release();
      },
      hidePaths: (err) => hidePath(artifact.hidePaths(err), fetched.path, url),
    };
  } catch (err) {
    fetched.release();
    // A copy that does not load is downloaded again next time rather than failing until the TTL.
    if (isMmeError(err) && err.code === 'MME_ERR_INVALID_MODEL') await repo.discard(name);
    throw hidePath(err, fetched.path, url);
  }
}

function hidePath(err: unknown, local: string, url: string): unknown {
  if (!isMmeError(err) || !err.message.includes(local)) return err;
  return new MmeError(err.code, err.message.split(local).join(url), {
    status: err.status,
    headers: { ...err.headers },
    cause: err,
  });
}
