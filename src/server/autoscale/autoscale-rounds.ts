/**
 * The autoscale rounds (autoscale=on): every kRoundMs, each serving model with an autoscaler gets
 * one round (autoscale-step.ts). A timer on the server's clock, re-armed after each
 * round, so a virtual clock drives it in tests and a slow round never overlaps the next. Each round
 * tells every autoscaler the cores the server's own process used since the last.
 */
import { realClock, type Clock, type Timer } from '../../util/clock';
import type { ScaledEntry } from './autoscale-step';

/** How often a model's queue is judged: a burst gets its first extra worker within about this. */
export const kRoundMs = 500;

export interface RoundsDeps<E extends ScaledEntry> {
  clock: Clock;
  entries(): Iterable<E>;
  round(entry: E): Promise<void>;
  log(line: string): void;
  /** This process's CPU time so far, µs. Default: process.cpuUsage() on the real clock; none on another (CPU time against virtual time means nothing). */
  cpuMicros?: () => number;
}

function processCpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

export class AutoscaleRounds<E extends ScaledEntry> {
  #timer: Timer | null = null;
  #stopped = false;
  /** The round under way: it awaits memory measurements (real I/O), whatever clock drives the timer. */
  #running: Promise<void> = Promise.resolve();
  readonly #cpuMicros: () => number;
  #cpuAt: { at: number; micros: number };

  constructor(private readonly deps: RoundsDeps<E>) {
    this.#cpuMicros = deps.cpuMicros ?? (deps.clock === realClock ? processCpuMicros : () => 0);
    this.#cpuAt = { at: deps.clock.now(), micros: this.#cpuMicros() };
  }

  start(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = this.deps.clock.setTimeout(() => void (this.#running = this.#run()), kRoundMs);
    this.#timer.unref();
  }

  async #run(): Promise<void> {
    this.#timer = null;
    const now = { at: this.deps.clock.now(), micros: this.#cpuMicros() };
    const cores = (now.micros - this.#cpuAt.micros) / Math.max(1, (now.at - this.#cpuAt.at) * 1000);
    this.#cpuAt = now;
    const entries = [...this.deps.entries()].filter((e) => e.model?.autoscaler);
    for (const e of entries) e.model!.autoscaler!.serverCores = cores;
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
