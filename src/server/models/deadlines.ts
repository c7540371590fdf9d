/**
 * A model's deadlines: every admitted job's, each list with one timer for its soonest unsettled
 * job. Jobs that keep the model's response timeout expire in admission order, so a FIFO holds
 * them and a request that names no deadline costs O(1); jobs whose caller's deadline comes first
 * expire in no particular order, so a heap holds those.
 */
import type { Clock, Timer } from '../../util/clock';
import { Fifo } from '../../util/fifo';
import { IndexedHeap } from '../../util/indexed-heap';
import type { Job } from '../jobs/job';

/** List length below which settled jobs behind an unsettled head are left for the timer. */
const kPruneAtLeast = 1024;

/** The jobs of one list, soonest deadline first. */
interface DueOrder {
  readonly length: number;
  push(job: Job): void;
  peek(): Job | undefined;
  shift(): Job | undefined;
  prune(dead: (job: Job) => boolean): void;
  drainAll(): Job[];
}

function byDeadline(): DueOrder {
  const heap = new IndexedHeap<Job, number>((a, b) => a < b);
  return {
    get length() {
      return heap.size;
    },
    push: (job) => heap.set(job, job.deadline),
    peek: () => heap.peek(),
    shift: () => heap.pop(),
    prune: (dead) => heap.prune(dead),
    drainAll: () => heap.clear(),
  };
}

class DeadlineList {
  #timer: Timer | null = null;
  #timerAt = 0;
  #pruneAt = kPruneAtLeast;

  constructor(
    private readonly jobs: DueOrder,
    private readonly clock: Clock,
    private readonly expired: (job: Job) => void,
  ) {}

  add(job: Job): void {
    this.jobs.push(job);
    this.#arm();
  }

  close(): void {
    this.clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.jobs.drainAll();
  }

  /** Re-armed only when the soonest deadline comes before the timer's. */
  #arm(): void {
    // Settled jobs leave on every admission, not only when the timer fires: through its options each
    // holds its request's context (ServerResponse, IncomingMessage, closures), and kept for the whole
    // response timeout they made every scavenge copy and promote megabytes: the p99.9 stall
    // (docs/performance.md). Those behind an unsettled head go once the list doubles.
    while (this.jobs.peek()?.settled) this.jobs.shift();
    if (this.jobs.length > this.#pruneAt) {
      this.jobs.prune((job) => job.settled);
      this.#pruneAt = Math.max(kPruneAtLeast, 2 * this.jobs.length);
    }
    const head = this.jobs.peek();
    if (this.#timer && head && this.#timerAt <= head.deadline) return;
    this.clock.clearTimeout(this.#timer);
    this.#timer = null;
    if (!head) return;
    this.#timerAt = head.deadline;
    this.#timer = this.clock.setTimeout(() => this.#fire(), Math.max(0, head.deadline - this.clock.now()));
  }

  #fire(): void {
    this.#timer = null;
    const now = this.clock.now();
    for (let job = this.jobs.peek(); job && (job.settled || job.deadline <= now); job = this.jobs.peek()) {
      this.jobs.shift();
      if (!job.settled) this.expired(job);
    }
    this.#arm();
  }
}

export class Deadlines {
  readonly #responseTimeouts: DeadlineList;
  readonly #callers: DeadlineList;

  /** `expired`: a job still unsettled at its deadline (`callerDeadline` says which kind). */
  constructor(clock: Clock, expired: (job: Job) => void) {
    this.#responseTimeouts = new DeadlineList(new Fifo<Job>(), clock, expired);
    this.#callers = new DeadlineList(byDeadline(), clock, expired);
  }

  add(job: Job): void {
    (job.callerDeadline ? this.#callers : this.#responseTimeouts).add(job);
  }

  /** Running jobs are settled by their workers' exits: their deadlines need no timer after this. */
  close(): void {
    this.#responseTimeouts.close();
    this.#callers.close();
  }
}
