import { Fifo } from '../../util/fifo';
import type { Job } from './job';

/**
 * A model's bounded queue of admitted jobs (MMS's per-model data queue, job_queue_size); jobs put
 * back after their worker died keep their turn at the head. With priority_levels (Triton's schedule
 * policy) each level is a FIFO and take() serves the head with the best level, improved by one for
 * every `agingMs` it waited (the older on a tie): a job is never passed by one that arrived
 * (its level + 1) × agingMs after it, so low priority never starves.
 */
export class JobQueue {
  readonly #levels: Fifo<Job>[];
  /** The level of a job that names none: the middle one, as Triton's default_priority_level is often set. */
  readonly #defaultLevel: number;

  constructor(
    readonly capacity: number,
    levels = 1,
    private readonly agingMs = 1,
  ) {
    this.#levels = Array.from({ length: levels }, () => new Fifo<Job>());
    this.#defaultLevel = Math.ceil(levels / 2) - 1;
  }

  get length(): number {
    return this.#levels.reduce((n, fifo) => n + fifo.length, 0);
  }

  get isFull(): boolean {
    return this.length >= this.capacity;
  }

  push(job: Job): void {
    this.#fifoOf(job).push(job);
  }

  unshift(jobs: Job[]): void {
    if (this.#levels.length === 1) this.#levels[0].unshift(jobs);
    else for (let i = jobs.length - 1; i >= 0; i--) this.#fifoOf(jobs[i]).unshift([jobs[i]]);
  }

  /** Up to n jobs still wanted at `now`; settled ones are dropped on the way. */
  take(n: number, now: number): Job[] {
    const out: Job[] = [];
    while (out.length < n && this.length > 0) {
      const job = (this.#levels.length === 1 ? this.#levels[0] : this.#next(now)).shift()!;
      if (!job.settled) out.push(job);
    }
    return out;
  }

  remove(job: Job): boolean {
    return this.#fifoOf(job).remove(job);
  }

  drainAll(): Job[] {
    return this.#levels.flatMap((fifo) => fifo.drainAll());
  }

  #fifoOf(job: Job): Fifo<Job> {
    return this.#levels[job.opts.priority ?? this.#defaultLevel] ?? this.#levels[this.#defaultLevel];
  }

  #next(now: number): Fifo<Job> {
    let best: Fifo<Job> | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    let bestAt = Number.POSITIVE_INFINITY;
    for (let level = 0; level < this.#levels.length; level++) {
      const fifo = this.#levels[level];
      const head = fifo.peek();
      if (!head) continue;
      const rank = level - Math.floor((now - head.admittedAt) / this.agingMs);
      if (rank < bestRank || (rank === bestRank && head.admittedAt < bestAt)) {
        best = fifo;
        bestRank = rank;
        bestAt = head.admittedAt;
      }
    }
    return best!;
  }
}
