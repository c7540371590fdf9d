import { Semaphore } from '../../util/semaphore';

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
