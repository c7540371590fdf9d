/**
 * A model from model_repository as a ModelArtifact: the disk cache's copy, resolved like any
 * local model, holding its place in the disk cache until disposed (unloaded). Errors name the
 * repository url, never the cache path.
 */
import { resolveArtifact, type ModelArtifact, type ResolveArtifactOptions } from '../artifacts/model-artifact';
import { isMmeError, MmeError } from '../errors';
import type { Timers } from '../util/clock';
import { deadlineSignal } from '../util/deadline-signal';
import type { ModelRepository } from './repository';

/** The fetch's overall deadline (the load's load_timeout) and the clock it runs on. */
export interface FetchDeadline {
  seconds: number;
  timers: Timers;
}

export async function repositoryArtifact(
  repo: ModelRepository,
  name: string,
  opts: ResolveArtifactOptions,
  signal: AbortSignal,
  deadline: FetchDeadline,
): Promise<ModelArtifact> {
  const fetched = await fetchWithin(repo, name, signal, deadline);
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
    if (isMmeError(err) && err.code === 'MME_ERR_INVALID_MODEL') await repo.cache.discard(name);
    throw hidePath(err, fetched.path, url);
  }
}

/**
 * model_repository_timeout bounds only silence: a download trickling a byte a second, or a store
 * that pages forever, would hold a load slot until an unload. The whole fetch ends at load_timeout.
 */
async function fetchWithin(repo: ModelRepository, name: string, signal: AbortSignal, deadline: FetchDeadline) {
  const { seconds, timers } = deadline;
  const within = deadlineSignal(
    signal,
    seconds * 1000,
    () =>
      new MmeError(
        'MME_ERR_REPOSITORY_TIMEOUT',
        `Model ${name}: its fetch from model_repository did not finish within its load_timeout (${seconds} s); nothing of it is kept. Retry later, or load it with a longer load_timeout.`,
      ),
    timers,
  );
  try {
    return await repo.fetch(name, within.signal);
  } catch (err) {
    // The SDK and the streams report an abort as their own error: the deadline's says why.
    throw within.signal.aborted && !signal.aborted ? within.signal.reason : err;
  } finally {
    within.done();
  }
}

function hidePath(err: unknown, local: string, url: string): unknown {
  return isMmeError(err) ? err.withMessage(err.message.split(local).join(url)) : err;
}
