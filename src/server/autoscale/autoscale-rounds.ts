/**
 * The autoscale rounds (autoscale=on): every kRoundMs, each serving model with an autoscaler gets
 * one round (autoscale-step.ts). A timer on the server's clock, re-armed after each
 * round, so a virtual clock drives it in tests and a slow round never overlaps the next.
 */
import type { Clock, Timer } from '../../util/clock';
import type { ScaledEntry } from './autoscale-step';

/** How often a model's queue is judged: a burst gets its first extra worker within about this. */
export const kRoundMs = 500;

export interface RoundsDeps<E extends ScaledEntry> {
  clock: Clock;
  entries(): Iterable<E>;
  round(entry: E): Promise<void>;
  log(line: string): void;
}

export class AutoscaleRounds<E extends ScaledEntry> {
  #timer: Timer | null = null;
  #stopped = false;
  /** The round under way: it awaits memory measurements (real I/O), whatever clock drives the timer. */
  #running: Promise<void> = Promise.resolve();

  constructor(private readonly deps: RoundsDeps<E>) {}

  start(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = this.deps.clock.setTimeout(() => void (this.#running = this.#run()), kRoundMs);
    this.#timer.unref();
  }

  async #run(): Promise<void> {
    this.#timer = null;
    const entries = [...this.deps.entries()].filter((e) => e.model?.autoscaler);
    await Promise.all(
      entries.map((e) =>
        this.deps.round(e).catch((err: Error) => this.deps.log(`[${e.name}] autoscale round failed: ${err.message}`)),
      ),
    );
    this.start();
  }

  /** Resolves once the round under way (if any) has finished and the next is armed. */
  settled(): Promise<void> {
    return this.#running;
  }

  stop(): void {
    this.#stopped = true;
    this.deps.clock.clearTimeout(this.#timer);
    this.#timer = null;
  }
}
