/**
 * Where a load's files come from (model_repository for an on-demand load that found the model
 * there, else its url), and the load permit it holds meanwhile (max_concurrent_loads).
 */
import { resolveArtifact } from '../../artifacts/model-artifact';
import { type DirReads, dirReadsFor } from '../../artifacts/dir-reads';
import type { ServerConfig } from '../../config/types';
import { repositoryArtifact } from '../../repository/artifact';
import type { ModelRepository } from '../../repository/repository';
import type { Clock } from '../../util/clock';
import type { LoadRequest } from './model-settings';
import type { Registration } from './registration';
import { Semaphore } from '../../util/semaphore';

export class LoadSource {
  /** Synchronous when every model root is on a local file system (decided once, at the first load). */
  #readsChosen: Promise<DirReads> | null = null;
  readonly #permits: LoadPermits;

  constructor(
    private readonly deps: {
      config: ServerConfig;
      cacheDir: string;
      repository: ModelRepository | null;
      clock: Clock;
    },
  ) {
    this.#permits = new LoadPermits(deps.config.maxConcurrentLoads);
  }

  permit(entry: Registration, req: LoadRequest, signal: AbortSignal): Promise<() => void> {
    return this.#permits.acquire(this.#repositoryOf(entry, req) !== null, signal);
  }

  /** Only the on-demand loader makes a repository url: a client's s3:// url is never fetched. */
  #repositoryOf(entry: Registration, req: LoadRequest): ModelRepository | null {
    const { repository } = this.deps;
    return entry.onDemand && req.url === repository?.urlOf(entry.name) ? repository : null;
  }

  async resolve(entry: Registration, req: LoadRequest, abort: AbortSignal): ReturnType<typeof resolveArtifact> {
    const { config } = this.deps;
    const opts = { cacheDir: this.deps.cacheDir, roots: config.modelRoots, handler: req.handler };
    const seconds = req.loadTimeoutSeconds ?? config.modelLoadTimeoutSeconds;
    const repository = this.#repositoryOf(entry, req);
    if (repository)
      return repositoryArtifact(repository, entry.name, opts, abort, { seconds, timers: this.deps.clock });
    // MMS resolves a relative url against model_store; errors name the url as the client sent it.
    return resolveArtifact(req.url, {
      ...opts,
      store: config.modelStore,
      reads: await (this.#readsChosen ??= dirReadsFor(config.modelRoots)),
    });
  }
}

/**
 * A fetch from model_repository goes at the store's pace, so repository loads hold at most every
 * permit but one: a local load always finds one, whatever the store does.
 */
export class LoadPermits {
  readonly #all: Semaphore;
  readonly #repository: Semaphore;

  constructor(permits: number) {
    this.#all = new Semaphore(permits);
    this.#repository = new Semaphore(Math.max(1, permits - 1));
  }

  /** Resolves with the permit's release; a wait `signal` ends leaves the line with its reason. */
  async acquire(fromRepository: boolean, signal: AbortSignal): Promise<() => void> {
    if (!fromRepository) return this.#all.acquire(signal);
    const releaseShare = await this.#repository.acquire(signal);
    try {
      const release = await this.#all.acquire(signal);
      return () => {
        release();
        releaseShare();
      };
    } catch (err) {
      releaseShare();
      throw err;
    }
  }
}
