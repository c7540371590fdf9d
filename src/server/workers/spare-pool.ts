/**
 * Worker processes started ahead of need. Starting Node and onnxruntime costs 100+ ms — most of a
 * small model's cold start — so a load takes a started spare and a new spare starts behind it,
 * once that load is over (kRefillAfterMs).
 * Spares serve CPU workers only: a GPU worker's CUDA_VISIBLE_DEVICES is fixed at spawn.
 */
import { WorkerHandle, type SpawnOptions } from './worker-handle';

/**
 * How long after the taken worker's Loaded its replacement starts: the load still reads the worker's
 * PSS and answers (a few ms), and a spawn (~3 ms of this thread, then a core for ~100 ms) would slow
 * it. A spare needs ~100 ms to start anyway, so back-to-back loads lose little.
 */
const kRefillAfterMs = 50;

export class SparePool {
  readonly #spares = new Set<WorkerHandle>();
  #closed = false;

  constructor(private readonly size: number, private readonly spawnOptions: SpawnOptions) {
    this.#fill();
  }

  /** Spares that have started and can take a model now. */
  get ready(): number {
    let n = 0;
    for (const w of this.#spares) if (w.hasStarted && w.exitInfo === null) n++;
    return n;
  }

  /**
   * A spare, warm ones first, or null (the caller starts a fresh process). One still starting is
   * worth taking too: it has a head start on any process spawned now.
   */
  take(): WorkerHandle | null {
    const live = [...this.#spares].filter((w) => w.exitInfo === null);
    const w = live.find((x) => x.hasStarted) ?? live[0];
    if (!w) return null;
    this.#spares.delete(w);
    w.removeAllListeners('exit');
    const refill = () => this.spawnOptions.clock.setTimeout(() => this.#fill(), kRefillAfterMs).unref();
    void Promise.race([w.lifecycle.ready, w.exited]).then(refill, refill);
    return w;
  }

  #fill(): void {
    while (!this.#closed && this.#spares.size < this.size) {
      const w = new WorkerHandle({ ...this.spawnOptions, gpuId: -1 }).start();
      this.#spares.add(w);
      w.once('exit', () => {
        this.#spares.delete(w);
        // One that died before it ever started would die again: stop refilling rather than loop.
        if (w.hasStarted) this.#fill();
        else this.spawnOptions.log(`spare worker exited before starting (${JSON.stringify(w.exitInfo)}); no more spares`);
      });
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#spares].map((w) => w.stop()));
    this.#spares.clear();
  }
}
