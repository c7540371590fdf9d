import type { Job } from './job';

/**
 * A model's bounded FIFO of admitted jobs (MMS's per-model data queue, job_queue_size).
 * Jobs put back after their worker died go to the head, so they keep their turn.
 */
export class JobQueue {
  #items: Job[] = [];
  #head = 0;

  constructor(readonly capacity: number) {}

  get length(): number {
    return this.#items.length - this.#head;
  }

  get isFull(): boolean {
    return this.length >= this.capacity;
  }

  push(job: Job): void {
    this.#items.push(job);
  }

  unshift(jobs: Job[]): void {
    this.#compact();
    this.#items.unshift(...jobs);
  }

  peek(): Job | undefined {
    return this.#items[this.#head];
  }

  /** Takes up to n jobs that are still wanted; cancelled and settled ones are dropped on the way. */
  take(n: number): Job[] {
    const out: Job[] = [];
    while (out.length < n && this.#head < this.#items.length) {
      const job = this.#items[this.#head++];
      if (!job.settled && !job.cancelled) out.push(job);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) this.#compact();
    return out;
  }

  remove(job: Job): boolean {
    const i = this.#items.indexOf(job, this.#head);
    if (i < 0) return false;
    this.#items.splice(i, 1);
    return true;
  }

  drainAll(): Job[] {
    const out = this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    return out;
  }

  #compact(): void {
    this.#items = this.#items.slice(this.#head);
    this.#head = 0;
  }
}
