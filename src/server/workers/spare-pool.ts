/**
 * Empty dedicated workers started ahead of need (TorchServe has none; SageMaker's cold start is
 * most of what they save). Starting Node and onnxruntime costs 100+ ms — most of a small model's
 * cold start — so a load takes a started spare and a new spare starts behind it, once that load is
 * over (kRefillAfterMs). Spares serve CPU workers only: a GPU worker's CUDA_VISIBLE_DEVICES is
 * fixed at spawn.
 *
 * Every dedicated process a load starts comes through here, so that at most one process starts
 * per load: a load that finds the spare still starting waits for it rather than start another,
 * and no spare starts while a load waits for a process to start (two starts at once on few cores
 * make both take twice as long). Loads back to back then cost one process start each, not two.
 */
import { DedicatedPolicy } from '../hosts/dedicated-policy';
import { HostProcess, type SpawnOptions } from '../hosts/host-process';
import { ModelSlot, type Assignment } from '../hosts/model-slot';
import type { ProcessLimits } from '../processes/process-limits';

/**
 * How long after the taken worker's Loaded its replacement starts: the load still reads the worker's
 * PSS and answers (a few ms), and a spawn (~3 ms of this thread, then a core for ~100 ms) would slow
 * it. A spare needs ~100 ms to start anyway, so back-to-back loads lose little.
 */
const kRefillAfterMs = 50;

export class SparePool {
  readonly #spares = new Set<HostProcess>();
  /** Loads waiting for their process to start (a spare still starting, or one of their own). */
  readonly #starting = new Set<ModelSlot>();
  #closed = false;

  constructor(
    private readonly size: number,
    private readonly spawnOptions: SpawnOptions,
  ) {
    this.#fill();
  }

  /** Spares that have started and can take a model now. */
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
    const host =
      spare ?? new HostProcess({ ...this.spawnOptions, limits }, assignment.id, new DedicatedPolicy(gpuId)).start();
    const slot = new ModelSlot(assignment, host, this.spawnOptions.log);
    // With no spares kept there is nothing to refill.
    if (this.size === 0) return slot;
    if (!spare?.hasStarted) this.#starting.add(slot);
    const done = () => {
      this.#starting.delete(slot);
      this.spawnOptions.clock.setTimeout(() => this.#fill(), kRefillAfterMs).unref();
    };
    void Promise.race([slot.ready, slot.exited]).then(done, done);
    return slot;
  }

  #fill(): void {
    // The last load waiting for a process start refills once it is over.
    if (this.#starting.size > 0) return;
    while (!this.#closed && this.#spares.size < this.size) {
      const id = `spare-${this.spawnOptions.processes.spawned + 1}`;
      const host = new HostProcess(this.spawnOptions, id, new DedicatedPolicy(-1), { onExit: (h) => this.#exited(h) });
      this.#spares.add(host.start());
    }
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
