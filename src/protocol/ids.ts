/**
 * The counters that frames carry, and why each stays valid for as long as the server runs.
 *
 * - Job (request) ids and batch ids go on the wire as 64-bit fields (BinaryWriter.id) and count up to
 *   2^53 − 1, the largest integer a JS number holds exactly: at a million requests a second that is
 *   285 years of uptime. They were u32 once, and request 2^32 (7.6 days at 6,500 req/s) ended the
 *   server. No set of ids in use is kept for them on the hot path: to collide, a job would have to
 *   outlive 2^53 others, and every job settles within its response timeout.
 * - Slots are u32 and count per host, which can load and unload models without end: they wrap,
 *   skipping the slots the host still holds, since two models on one slot would take each other's
 *   frames.
 */

/** Largest job or batch id: the largest integer a JS number holds exactly. */
export const MAX_WIRE_ID = Number.MAX_SAFE_INTEGER;
/** Largest value of a u32 field (slots, lengths, counts). */
export const MAX_U32 = 0xffff_ffff;

export class IdAllocator {
  #next = 1;

  /** Ids run from 1 to `max`: 0 is left out, it means "none" (slot 0 = a dedicated worker's one model). */
  constructor(readonly max: number) {}

  /** The id after the last one given, 1 after `max`; with `inUse`, the first such one it does not hold. */
  next(inUse?: (id: number) => boolean): number {
    for (let tried = 0; tried < this.max; tried++) {
      const id = this.#next;
      this.#next = id >= this.max ? 1 : id + 1;
      if (!inUse?.(id)) return id;
    }
    throw new RangeError(`every id from 1 to ${this.max} is in use`);
  }

  /** The next id to give: tests start near a boundary (2^32, the wrap) instead of counting up to it. */
  skipTo(id: number): void {
    this.#next = id;
  }
}
