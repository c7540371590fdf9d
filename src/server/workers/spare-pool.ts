/**
 * Empty dedicated workers started ahead of need (TorchServe has none): starting Node and onnxruntime
 * costs 100+ ms, most of a small model's cold start. A load takes a started spare, and a new one
 * starts once that load is over. CPU only: a GPU worker's CUDA_VISIBLE_DEVICES is fixed at spawn.
 *
 * Every dedicated process a load starts comes through here, so at most one process starts per load:
 * a load that finds the spare still starting waits for it, and no spare starts while a load waits
 * for its process (two starts at once on few cores make both take twice as long).
 *
 * A process unloaded of a model that leaves nothing behind (CPU, no limits, the default handler) is
 * given back as a spare when the pool wants one: SageMaker's unload-then-load churn then starts no
 * process. onnxruntime-node does not return all of a released session's memory: the pool measures
 * what the process kept and stops it if that is more than kKeptBytes.
 */
import { DedicatedPolicy } from '../hosts/dedicated-policy';
import { HostProcess, type HostEvents, type SpawnOptions } from '../hosts/host-process';
import { ModelSlot, type Assignment } from '../hosts/model-slot';
import type { ProcessLimits } from '../processes/limit-enforcement';
import type { Timer } from '../../util/clock';

/**
 * How long after the taken worker's Loaded its replacement starts: the load still reads the worker's
 * PSS and answers (a few ms), and a spawn (~3 ms of this thread, then a core for ~100 ms) would slow
 * it. A spare needs ~100 ms to start anyway, so back-to-back loads lose little.
 */
const kRefillAfterMs = 50;

/** What a process given back may keep of the models it held (PSS over its PSS at start) and still serve as a spare. */
const kKeptBytes = 32 * 1024 * 1024;

export class SparePool {
  readonly #spares = new Set<HostProcess>();
  /** Loads waiting for their process to start (a spare still starting, or one of their own). */
  readonly #starting = new Set<ModelSlot>();
  /** Each process's PSS once it started: what a process given back is measured against. */
  readonly #startedBytes = new WeakMap<HostProcess, number>();
  readonly #events: HostEvents = {
    onStarted: (h) => void h.measureMemory().then((bytes) => this.#startedBytes.set(h, bytes)),
    onUnloaded: (h) => this.#givenBack(h),
    onExit: (h) => this.#exited(h),
  };
  /** The refill after the last load: a process given back before it fills the pool instead. */
  #refill: Timer | null = null;
  #closed = false;

  constructor(
    private readonly size: number,
    private readonly spawnOptions: SpawnOptions,
  ) {
    this.#fill();
  }

  /** Spares that have started and can take a model now: a process given back is kept only while there are fewer than `size`. */
  get ready(): number {
    return [...this.#spares].filter((h) => h.hasStarted && h.exitInfo === null).length;
  }

  /**
   * The load's process: a spare when one fits it (a started one first; one still starting has a
   * head start on a fresh spawn), else a fresh one. Spares start outside any model's limits and on
   * no GPU: a limited model's processes join its limits at spawn, a GPU worker's device is its env.
   */
  place(limits: ProcessLimits | null, assignment: Assignment): ModelSlot {
    const gpuId = assignment.load.gpuId;
    const live = gpuId < 0 && limits === null ? [...this.#spares].filter((h) => h.exitInfo === null) : [];
    const spare = live.find((h) => h.hasStarted) ?? live[0];
    if (spare) this.#spares.delete(spare);
    const host = spare ?? this.#host({ ...this.spawnOptions, limits }, assignment.id, gpuId);
    const slot = new ModelSlot(assignment, host);
    // With no spares kept there is nothing to refill.
    if (this.size === 0) return slot;
    if (!spare?.hasStarted) this.#starting.add(slot);
    const done = () => {
      this.#starting.delete(slot);
      this.spawnOptions.clock.clearTimeout(this.#refill);
      this.#refill = this.spawnOptions.clock.setTimeout(() => this.#fill(), kRefillAfterMs);
      this.#refill.unref();
    };
    void Promise.race([slot.ready, slot.exited]).then(done, done);
    return slot;
  }

  #host(options: SpawnOptions, id: string, gpuId: number): HostProcess {
    // Only a process that a spare could have been is given back (while spares are kept, on no GPU, in
    // no model's limits): only it is measured at start and heard from at its unload.
    const reusable = this.size > 0 && gpuId < 0 && !options.limits;
    const policy = new DedicatedPolicy(gpuId, reusable ? (slot) => this.#reusable(slot) : undefined);
    return new HostProcess(options, id, policy, reusable ? this.#events : undefined).start();
  }

  #fill(): void {
    // The last load waiting for a process start refills once it is over.
    if (this.#starting.size > 0) return;
    while (!this.#closed && this.#spares.size < this.size) {
      this.#spares.add(this.#host(this.spawnOptions, `spare-${this.spawnOptions.processes.spawned + 1}`, -1));
    }
  }

  /** Whether `slot`'s process may be given back once its model is unloaded (a custom handler's module state may outlive its session). */
  #reusable(slot: ModelSlot): boolean {
    const host = slot.host;
    return (
      !this.#closed &&
      this.ready < this.size &&
      slot.assignment.load.handlerPath === null &&
      host.batches.size === 0 &&
      host.killedBy === null &&
      host.processState === 'serving'
    );
  }

  /**
   * Its model is unloaded: it replaces a spare still starting (stopped: its start is not needed any
   * more), or goes if the pool has its spares by now. Kept only if it gave back what its model held.
   */
  #givenBack(h: HostProcess): void {
    if (this.#closed || this.ready >= this.size || !h.open || h.slotCount > 0) {
      void h.stop();
      return;
    }
    const starting = [...this.#spares].find((s) => !s.hasStarted);
    if (starting) {
      this.#spares.delete(starting);
      void starting.stop();
    }
    this.#spares.add(h);
    this.spawnOptions.clock.clearTimeout(this.#refill);
    const atStart = this.#startedBytes.get(h) ?? 0;
    void h.measureMemory().then((bytes) => {
      if (bytes - atStart <= kKeptBytes || !this.#spares.delete(h)) return;
      this.spawnOptions.log(
        `[${h.id}] kept ${Math.round((bytes - atStart) / 1048576)} MiB of the model it unloaded; stopped rather than kept as a spare`,
      );
      void h.stop();
      this.#fill();
    });
  }

  #exited(h: HostProcess): void {
    if (!this.#spares.delete(h)) return; // taken: its model's worker set answers for it now
    // One that died before it ever started would die again: stop refilling rather than loop.
    if (h.hasStarted) this.#fill();
    else this.spawnOptions.log(`spare worker exited before starting (${JSON.stringify(h.exitInfo)}); no more spares`);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const spares = [...this.#spares];
    this.#spares.clear();
    await Promise.all(spares.map((h) => h.stop()));
  }
}
