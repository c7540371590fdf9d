import { Fifo } from '../../util/fifo';
import type { Job } from './job';

/**
 * A model's bounded FIFO of admitted jobs (MMS's per-model data queue, job_queue_size).
 * Jobs put back after their worker died go to the head, so they keep their turn.
 */
export class JobQueue {
  readonly #jobs = new Fifo<Job>();

  constructor(readonly capacity: number) {}

  get length(): number {
    return this.#jobs.length;
  }

  get isFull(): boolean {
    return this.length >= this.capacity;
  }

  push(job: Job): void {
    this.#jobs.push(job);
  }

  unshift(jobs: Job[]): void {
    this.#jobs.unshift(jobs);
  }

  /** Takes up to n jobs that are still wanted; cancelled and settled ones are dropped on the way. */
  take(n: number): Job[] {
    const out: Job[] = [];
    while (out.length < n && this.#jobs.length > 0) {
      const job = this.#jobs.shift()!;
      if (!job.settled && !job.cancelled) out.push(job);
    }
    return out;
  }

  remove(job: Job): boolean {
    return this.#jobs.remove(job);
  }

  drainAll(): Job[] {
    return this.#jobs.drainAll();
  }
}
