/**
 * A shared host in the pool: a HostProcess with the shared policy and the memory ledger placement
 * and recycling read, kept as slots come and go so placement costs the same with 10 000 models as
 * with ten. What the host holds beyond base + costs is what unloads freed and the allocator kept.
 */
import { HostProcess, type HostEvents, type SpawnOptions } from './host-process';
import type { ModelSlot } from './model-slot';
import { SharedPolicy } from './shared-policy';

export class SharedHost extends HostProcess {
  /** PSS once started, before any model (bytes); 0 until measured. */
  baseBytes = 0;
  /** PSS at the last measurement (bytes). */
  measuredBytes = 0;
  /** The model taking most of this host's thread, while host-balance.ts says one does: placement goes elsewhere. */
  heavyModel: string | null = null;
  /** How many slots each model name holds, and each loaded slot's cost (fixed at its load). */
  readonly #names = new Map<string, number>();
  readonly #charged = new Map<number, number>();
  #loadedBytes = 0;

  constructor(opts: SpawnOptions, id: string, events: HostEvents) {
    super(opts, id, new SharedPolicy(), events);
  }

  get modelBytes(): number {
    return this.#loadedBytes;
  }

  /** Its slots that have loaded (modelBytes is theirs). */
  get loadedCount(): number {
    return this.#charged.size;
  }

  /** What placement compares (bytes), a load in progress counted as `loadingBytes`; bases are all alike. */
  placementBytes(loadingBytes: number): number {
    return this.#loadedBytes + (this.slotCount - this.#charged.size) * loadingBytes;
  }

  get usedBytes(): number {
    return this.baseBytes + this.modelBytes;
  }

  /** Bytes freed by unloads and not given back, at the last measurement. */
  get wasteBytes(): number {
    return Math.max(0, this.measuredBytes - this.usedBytes);
  }

  holdsModel(name: string): boolean {
    return this.#names.has(name);
  }

  protected override admitted(slot: ModelSlot): void {
    this.#names.set(slot.modelName, (this.#names.get(slot.modelName) ?? 0) + 1);
  }

  protected override charged(slotId: number, slot: ModelSlot): void {
    if (this.#charged.has(slotId)) return;
    this.#charged.set(slotId, slot.lifecycle.memoryBytes);
    this.#loadedBytes += slot.lifecycle.memoryBytes;
  }

  protected override forgotten(slotId: number, slot: ModelSlot): void {
    const held = this.#names.get(slot.modelName)!;
    if (held > 1) this.#names.set(slot.modelName, held - 1);
    else this.#names.delete(slot.modelName);
    this.#loadedBytes -= this.#charged.get(slotId) ?? 0;
    this.#charged.delete(slotId);
  }
}
