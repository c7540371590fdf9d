/**
 * memory_limit_mb where the server cannot make cgroups: it measures the model's worker processes
 * (their PSS, process-memory.ts) every interval while any runs, and stops the largest once their
 * sum is past the limit, as the kernel's OOM killer would in a cgroup. Between two checks a worker
 * may pass the limit: the watch bounds what a leak or a large request keeps, not a burst.
 */
import type { Clock, Timer } from '../../util/clock';
import { mb } from '../../util/mb';
import type { LimitedProcess, ProcessLimits } from './process-limits';

export class MemoryWatch implements ProcessLimits {
  readonly #members = new Set<LimitedProcess>();
  #timer: Timer | null = null;

  constructor(
    private readonly name: string,
    private readonly limitBytes: number,
    private readonly opts: { clock: Clock; log: (line: string) => void; watchIntervalMs: number },
  ) {}

  joined(p: LimitedProcess): void {
    this.#members.add(p);
    this.#arm();
  }

  /** The watch's kills are the server's own (kill reason memory-limit): the exit says so without help. */
  left(p: LimitedProcess): boolean {
    this.#members.delete(p);
    if (this.#members.size === 0) {
      this.opts.clock.clearTimeout(this.#timer);
      this.#timer = null;
    }
    return false;
  }

  #arm(): void {
    if (this.#timer !== null || this.#members.size === 0) return;
    this.#timer = this.opts.clock.setTimeout(() => void this.#check(), this.opts.watchIntervalMs);
    this.#timer.unref();
  }

  async #check(): Promise<void> {
    const members = [...this.#members];
    const sizes = await Promise.all(members.map((p) => p.measureMemory()));
    const total = sizes.reduce((s, b) => s + b, 0);
    if (total > this.limitBytes) {
      const largest = sizes.indexOf(Math.max(...sizes));
      const p = members[largest];
      // Gone meanwhile: its exit already took its memory with it.
      if (this.#members.has(p)) {
        this.opts.log(
          `[${this.name}] its workers use ${mb(total)}, past memory_limit_mb=${this.limitBytes / 2 ** 20}: stopping worker pid ${p.pid} (${mb(sizes[largest])})`,
        );
        // Out of the sums from now on: its memory goes with its exit, and no neighbour is stopped for it.
        this.#members.delete(p);
        p.kill('memory-limit', this.name);
      }
    }
    this.#timer = null;
    this.#arm();
  }
}
