/**
 * Deadlines with one timer for the soonest unsettled item: the dispatcher's response timeouts
 * (admission order, so a FIFO and O(1) a request) and its callers' own deadlines (any order, so a
 * heap). Settled items leave lazily; the timer is re-armed only when a sooner deadline comes.
 */
import type { Clock, Timer } from './clock';
import { Fifo } from './fifo';
import { IndexedHeap } from './indexed-heap';

/** What has a deadline: settled once it needs no timer any more. */
export interface Due {
  readonly deadline: number;
  readonly settled: boolean;
}

/** List length below which settled items behind an unsettled head are left for the timer. */
const kPruneAtLeast = 1024;

/** The items of one list, soonest deadline first. */
interface DueOrder<T> {
  readonly length: number;
  push(item: T): void;
  peek(): T | undefined;
  shift(): T | undefined;
  prune(dead: (item: T) => boolean): void;
  drainAll(): T[];
}

function byDeadline<T extends Due>(): DueOrder<T> {
  const heap = new IndexedHeap<T, number>((a, b) => a < b);
  return {
    get length() {
      return heap.size;
    },
    push: (item) => heap.set(item, item.deadline),
    peek: () => heap.peek(),
    shift: () => heap.pop(),
    prune: (dead) => heap.prune(dead),
    drainAll: () => heap.clear(),
  };
}

export class DeadlineList<T extends Due> {
  #timer: Timer | null = null;
  #timerAt = 0;
  #pruneAt = kPruneAtLeast;

  private constructor(
    private readonly items: DueOrder<T>,
    private readonly clock: Clock,
    private readonly expired: (item: T) => void,
  ) {}

  /** Items whose deadlines come in the order they are added. */
  static inOrder<T extends Due>(clock: Clock, expired: (item: T) => void): DeadlineList<T> {
    return new DeadlineList<T>(new Fifo<T>(), clock, expired);
  }

  /** Items whose deadlines come in any order. */
  static anyOrder<T extends Due>(clock: Clock, expired: (item: T) => void): DeadlineList<T> {
    return new DeadlineList<T>(byDeadline<T>(), clock, expired);
  }

  add(item: T): void {
    this.items.push(item);
    this.#arm();
  }

  /** No timer any more: what is left is settled some other way. */
  close(): void {
    this.clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.items.drainAll();
  }

  /** Re-armed only when the soonest deadline comes before the timer's. */
  #arm(): void {
    // Settled items leave on every addition, not only when the timer fires: through its options each
    // dispatcher job holds its request's context (ServerResponse, IncomingMessage, closures), and
    // kept for the whole response timeout they made every scavenge copy and promote megabytes: the
    // p99.9 stall (docs/performance.md). Those behind an unsettled head go once the list doubles.
    while (this.items.peek()?.settled) this.items.shift();
    if (this.items.length > this.#pruneAt) {
      this.items.prune((item) => item.settled);
      this.#pruneAt = Math.max(kPruneAtLeast, 2 * this.items.length);
    }
    const head = this.items.peek();
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
    for (let item = this.items.peek(); item && (item.settled || item.deadline <= now); item = this.items.peek()) {
      this.items.shift();
      if (!item.settled) this.expired(item);
    }
    this.#arm();
  }
}
