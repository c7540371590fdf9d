/**
 * What a stop signal (SIGINT, SIGTERM) means, given the ones before it. One Ctrl-C often arrives
 * twice a few milliseconds apart: the terminal signals its whole foreground group, and `npm start`
 * forwards the signal it got to the server as well; `timeout` does the same with SIGTERM. Counting
 * both as presses would turn a drain into an immediate exit.
 */
import type { Clock } from './util/clock';

/** A repeat this soon after the first signal is the same press, not an operator insisting. */
export const kSamePressMs = 1000;

/** `drain`: the first signal; `repeat`: the same press arriving again; `force`: a later one, exit now. */
export type StopAction = 'drain' | 'repeat' | 'force';

export class StopSignals {
  #firstAt: number | null = null;

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  received(): StopAction {
    const now = this.clock.now();
    if (this.#firstAt === null) {
      this.#firstAt = now;
      return 'drain';
    }
    return now - this.#firstAt < kSamePressMs ? 'repeat' : 'force';
  }
}
