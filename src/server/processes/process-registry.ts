/**
 * The worker processes of one server: what its shutdown kills, what a test counts. One per server
 * (made by the composition root), so two servers in one Node process never touch each other's.
 */
import type { KillReason, WorkerExit } from './exit-reason';

export interface LiveProcess {
  kill(reason: KillReason): void;
  readonly exited: Promise<WorkerExit>;
}

export class ProcessRegistry {
  /** Processes started so far (a 507 admission must start none). */
  spawned = 0;
  /** Every process not yet exited: a bounded shutdown kills what is left. */
  readonly live = new Set<LiveProcess>();
  /** Processes that exited on a promise rejection nobody handled (a bug): the test suite checks there were none. */
  unhandledRejectionExits = 0;
}
