/**
 * The load slots (max_concurrent_loads). A fetch from model_repository goes at the store's pace,
 * up to its load_timeout, so repository loads hold at most every slot but one: a local load
 * (POST /models, a model in model_store) always finds one, whatever the store does. With one slot
 * there is nothing to share, and a repository load may hold it.
 */
import { Semaphore } from '../../util/semaphore';

export class LoadPermits {
  readonly #all: Semaphore;
  readonly #repository: Semaphore;

  constructor(slots: number) {
    this.#all = new Semaphore(slots);
    this.#repository = new Semaphore(Math.max(1, slots - 1));
  }

  /** Resolves with the release of a slot; a wait `signal` ends leaves the line with its reason. */
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
