/**
 * Job and batch ids are 64-bit on the wire and count up to 2^53 − 1: 285 years at a million
 * requests a second (as u32, request 2^32 ended the server after 7.6 days), so no set of ids in use
 * is kept. Slots are u32 per host and wrap, skipping those still held: two models on one slot would
 * take each other's frames.
 */

export const MAX_WIRE_ID = Number.MAX_SAFE_INTEGER;
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
