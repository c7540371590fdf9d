import type { Clock, Timer } from '../../util/clock';

/** MMS's worker restart back-off (WorkerThread.BACK_OFF): Fibonacci seconds 0, 1, 1, 2, 3, 5, …, capped. */
const kBackoffCapSeconds = 60;
/** A restart has worked once what it started has stayed up this long: one that dies sooner is a crash loop. */
export const kStableMs = 10_000;

export function restartDelaySeconds(attempt: number, capSeconds: number): number {
  let a = 0;
  let b = 1;
  for (let i = 0; i < attempt; i++) [a, b] = [b, a + b];
  return Math.min(a, capSeconds);
}

export class Backoff {
  #attempt = 0;
  #waiting: { timer: Timer; restart: () => void } | null = null;
  readonly #watches = new Set<Timer>();

  constructor(private readonly clock: Clock) {}

  get attempt(): number {
    return this.#attempt;
  }

  get delaySeconds(): number {
    return restartDelaySeconds(this.#attempt, kBackoffCapSeconds);
  }

  get waiting(): boolean {
    return this.#waiting !== null;
  }

  failed(): void {
    this.#attempt++;
  }

  /** A restart already waiting makes this a no-op. */
  wait(restart: () => void): void {
    if (this.#waiting) return;
    this.#waiting = { timer: this.clock.setTimeout(() => this.cutShort(), this.delaySeconds * 1000), restart };
  }

  /** What the waiting restart waits for has come (a shared host has room): it runs now. */
  cutShort(): void {
    const waiting = this.#waiting;
    if (!waiting) return;
    this.clock.clearTimeout(waiting.timer);
    this.#waiting = null;
    waiting.restart();
  }

  /** What a restart started has worked if `stillUp()` after kStableMs: the count starts again. */
  watch(stillUp: () => boolean): void {
    const timer = this.clock.setTimeout(() => {
      this.#watches.delete(timer);
      if (stillUp()) this.#attempt = 0;
    }, kStableMs);
    timer.unref();
    this.#watches.add(timer);
  }

  close(): void {
    this.clock.clearTimeout(this.#waiting?.timer ?? null);
    this.#waiting = null;
    for (const t of this.#watches) this.clock.clearTimeout(t);
    this.#watches.clear();
  }
}
