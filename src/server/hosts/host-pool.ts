/**
 * The shared hosts (worker_mode=shared): `shared_workers` processes, each holding many models. A
 * host that dies unasked is replaced at once, or after a back-off if it keeps dying. Past
 * shared_worker_recycle_mb of memory that unloads freed and the process kept, a new host starts,
 * every model moves there (started before it leaves, so no request is lost) and the old one stops.
 */
import type { ServerConfig } from '../../config/types';
import { MmeError } from '../../errors';
import { mb } from '../../util/mb';
import { Backoff } from '../processes/backoff';
import { describeExit } from '../processes/exit-reason';
import { HostBalance } from './host-balance';
import { HostProcess, type SpawnOptions } from './host-process';
import { ModelSlot, type Assignment } from './model-slot';
import { SharedPolicy, type SharedHost } from './shared-policy';

export interface HostPoolOptions {
  /** max_models_per_worker 0 = no cap (memory decides); recycle bytes, heavy share (host-balance.ts) 0 = never. */
  config: Pick<
    ServerConfig,
    'sharedWorkers' | 'maxModelsPerWorker' | 'sharedWorkerRecycleBytes' | 'sharedHostHeavyShare'
  >;
  spawn: SpawnOptions;
  /** SharedHostRestarts. */
  onRestarted: () => void;
  /** SharedHostRecycles. */
  onRecycled: () => void;
}

/** What placement assumes a model costs before any has been measured. */
const kFirstModelBytes = 2 ** 20;

export class HostPool {
  readonly #hosts: SharedHost[] = [];
  #seq = 0;
  #closed = false;
  readonly #backoff: Backoff;
  /** Worker sets that found no host with room. */
  readonly #waitingForRoom = new Set<() => void>();
  readonly #balance: HostBalance | null;

  constructor(private readonly opts: HostPoolOptions) {
    this.#backoff = new Backoff(opts.spawn.clock);
    const { sharedWorkers, sharedHostHeavyShare } = opts.config;
    for (let i = 0; i < sharedWorkers; i++) this.#addHost();
    this.#balance =
      sharedHostHeavyShare > 0 && sharedWorkers > 1
        ? new HostBalance({
            hosts: () => this.#hosts,
            canTake: (h) => this.#canTake(h),
            clock: opts.spawn.clock,
            heavyShare: sharedHostHeavyShare,
            log: (line) => opts.spawn.log(line),
          })
        : null;
  }

  /** Calls `wake` once, when a host starts or a slot frees: a place() that threw may work then. */
  waitForRoom(wake: () => void): void {
    if (!this.#closed) this.#waitingForRoom.add(wake);
  }

  #wakeRoomWaiters(): void {
    if (this.#waitingForRoom.size === 0) return;
    const waiting = [...this.#waitingForRoom];
    this.#waitingForRoom.clear();
    // After the pool's own bookkeeping: the woken sets place() into it.
    queueMicrotask(() => {
      for (const wake of waiting) wake();
    });
  }

  get hosts(): readonly SharedHost[] {
    return this.#hosts;
  }

  /** What the hosts cost with no model in them (bytes): counted by the memory budget. */
  get baseBytes(): number {
    return this.#hosts.reduce((n, h) => n + h.policy.baseBytes, 0);
  }

  /**
   * Puts a model into the serving host with the least memory in use that has room and holds no
   * heavy model (host-balance.ts); throws when every host is at max_models_per_worker.
   */
  place(assignment: Assignment): ModelSlot {
    const name = assignment.load.modelName;
    const { maxModelsPerWorker } = this.opts.config;
    const open = this.#hosts.filter((h) => this.#canTake(h));
    // A second copy of a model (min_workers > 1) goes to another host when there is one.
    const elsewhere = open.filter((h) => !h.policy.holdsModel(name));
    const near = elsewhere.length > 0 ? elsewhere : open;
    const light = near.filter((h) => h.policy.heavyModel === null);
    const candidates = light.length > 0 ? light : near;
    // A model still loading counts as the mean model so far: a burst of loads spreads out before any has measured.
    const loaded = this.#hosts.reduce((n, h) => n + h.policy.loadedCount, 0);
    const loading = loaded === 0 ? kFirstModelBytes : this.#hosts.reduce((n, h) => n + h.policy.modelBytes, 0) / loaded;
    // Bases are all alike: what placement compares is the models' bytes.
    const bytes = (h: SharedHost) => h.policy.modelBytes + (h.slotCount - h.policy.loadedCount) * loading;
    let best: SharedHost | null = null;
    for (const h of candidates) {
      // Fewer bytes, then fewer slots.
      const d = best ? bytes(h) - bytes(best) || h.slotCount - best.slotCount : -1;
      if (d < 0) best = h;
    }
    if (!best) {
      const full = maxModelsPerWorker > 0 && this.#hosts.some((h) => h.slotCount >= maxModelsPerWorker);
      throw new MmeError(
        'MME_ERR_NO_WORKER',
        `Model ${name} has no shared host to go to: ${
          full
            ? `every one of the ${this.#hosts.length} hosts holds max_models_per_worker (${maxModelsPerWorker}) models. Unload a model, or raise max_models_per_worker or shared_workers.`
            : 'the hosts keep dying and the next one starts after a back-off (the server log says why). Retry later.'
        }`,
      );
    }
    return new ModelSlot(assignment, best);
  }

  #canTake(host: SharedHost): boolean {
    const { maxModelsPerWorker } = this.opts.config;
    return host.open && (maxModelsPerWorker === 0 || host.slotCount < maxModelsPerWorker);
  }

  recycle(host: SharedHost): void {
    if (host.processState !== 'serving' || this.#closed) return;
    this.opts.spawn.log(
      `[${host.id}] recycling: ${mb(host.policy.wasteBytes)} freed by unloads is still held (${mb(host.policy.measuredBytes)} PSS, ${mb(host.policy.baseBytes + host.policy.modelBytes)} in use by ${host.slotCount} models); moving its models to a new host`,
      { worker: host.id, pid: host.pid },
    );
    host.drain();
    this.opts.onRecycled();
    this.#addHost();
    if (host.slotCount === 0) void this.#retire(host);
    else for (const s of host.slots) s.relocate();
  }

  #addHost(): void {
    const host: SharedHost = new HostProcess(this.opts.spawn, `host-${++this.#seq}`, new SharedPolicy(), {
      onStarted: () => {
        void host.measureMemory().then((bytes) => {
          host.policy.baseBytes = bytes;
          host.policy.measuredBytes = Math.max(host.policy.measuredBytes, bytes);
        });
        this.#backoff.watch(() => host.exitInfo === null);
      },
      onUnloaded: () => {
        if (host.open) this.#wakeRoomWaiters();
        void this.#afterUnload(host);
      },
      onExit: () => this.#onHostExit(host),
    });
    this.#hosts.push(host.start());
    this.#wakeRoomWaiters();
  }

  async #afterUnload(host: SharedHost): Promise<void> {
    if (host.processState === 'draining') {
      if (host.slotCount === 0) await this.#retire(host);
      return;
    }
    host.policy.measuredBytes = await host.measureMemory();
    const limit = this.opts.config.sharedWorkerRecycleBytes;
    if (limit > 0 && host.policy.wasteBytes > limit && host.exitInfo === null) this.recycle(host);
  }

  async #retire(host: SharedHost): Promise<void> {
    const i = this.#hosts.indexOf(host);
    if (i >= 0) this.#hosts.splice(i, 1);
    await host.stop();
  }

  #onHostExit(host: SharedHost): void {
    const i = this.#hosts.indexOf(host);
    if (i < 0 || this.#closed) return;
    this.#hosts.splice(i, 1);
    const exit = host.exitInfo!;
    if (exit.reason === 'stopped') return;
    const delay = this.#backoff.delaySeconds;
    this.#backoff.failed();
    this.opts.spawn.log(
      `[${host.id}] shared host (pid ${host.pid}) ${describeExit(exit)} (exit reason: ${exit.reason}${exit.causedBy ? `, for model ${exit.causedBy}` : ''}); its models reload in the other hosts, and a new host starts${delay > 0 ? ` in ${delay} s` : ''}`,
      { worker: host.id, pid: host.pid },
    );
    // At once when there is no back-off: the models that were loading in the dead host are placed
    // again as soon as its exit is handled, and with one host there must be one to go to.
    if (delay === 0) this.#refill();
    else this.#backoff.wait(() => this.#refill());
  }

  /** A recycled host's successor is already counted. */
  #refill(): void {
    if (this.#closed) return;
    const serving = this.#hosts.filter((h) => h.processState !== 'draining').length;
    for (let n = serving; n < this.opts.config.sharedWorkers; n++) {
      this.#addHost();
      this.opts.onRestarted();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#balance?.close();
    this.#waitingForRoom.clear();
    this.#backoff.close();
    await Promise.all(this.#hosts.map((h) => h.stop()));
  }
}
