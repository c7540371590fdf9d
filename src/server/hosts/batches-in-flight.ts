/**
 * The one record of the batches a worker process holds, with the slot each was sent for
 * (TorchServe's BatchAggregator, for many slots). At the process's exit it says which were running.
 */
import type { InferMessage } from '../../protocol/messages';
import type { Job } from '../jobs/job';

/** A batch sent to a worker, which owns it until it is answered or the worker ends. */
export interface InFlightBatch {
  readonly msg: InferMessage;
  readonly jobs: readonly Job[];
}

export interface HeldBatch<S> {
  readonly batch: InFlightBatch;
  readonly slot: S;
  /** Its requests not answered yet: an independent batch is answered one request at a time. */
  left: number;
}

/** `running`: it was being computed, not only in the pipe. */
export type LostBatch<S> = Omit<HeldBatch<S>, 'left'> & { readonly running: boolean };

export class BatchesInFlight<S extends { readonly concurrentBatches: boolean }> {
  readonly #batches = new Map<number, HeldBatch<S>>();
  /** Each slot's count, kept: its idleness is read on every dispatch. */
  readonly #perSlot = new Map<S, number>();

  get size(): number {
    return this.#batches.size;
  }

  of(slot: S): number {
    return this.#perSlot.get(slot) ?? 0;
  }

  requestsOf(slot: S): number {
    let n = 0;
    for (const held of this.#batches.values()) if (held.slot === slot) n += held.left;
    return n;
  }

  /** The request `id` of a batch sent for `slot` and not answered in full (a streamed chunk's, a timeout's). */
  jobOf(slot: S, id: number): Job | undefined {
    for (const held of this.#batches.values()) {
      if (held.slot !== slot) continue;
      const job = held.batch.jobs.find((j) => j.id === id);
      if (job) return job;
    }
    return undefined;
  }

  add(slot: S, msg: InferMessage, jobs: readonly Job[]): void {
    this.#batches.set(msg.batchId, { batch: { msg, jobs }, slot, left: jobs.length });
    this.#perSlot.set(slot, this.of(slot) + 1);
  }

  /** The batch, if held; forgotten once `left` ≤ 0. */
  answer(batchId: number, answered: number): HeldBatch<S> | undefined {
    const held = this.#batches.get(batchId);
    if (!held) return undefined;
    held.left -= answered;
    if (held.left <= 0) {
      this.#batches.delete(batchId);
      const left = this.of(held.slot) - 1;
      if (left > 0) this.#perSlot.set(held.slot, left);
      else this.#perSlot.delete(held.slot);
    }
    return held;
  }

  takeAll(): LostBatch<S>[] {
    // Each slot's batches run one after another (different slots' side by side, in a shared host),
    // so each slot's oldest was running; a preload_model worker runs all of its batches at once.
    const seen = new Set<S>();
    const lost = [...this.#batches.values()].map(({ batch, slot }) => {
      const oldest = !seen.has(slot);
      seen.add(slot);
      return { batch, slot, running: slot.concurrentBatches || oldest };
    });
    this.#batches.clear();
    this.#perSlot.clear();
    return lost;
  }
}
