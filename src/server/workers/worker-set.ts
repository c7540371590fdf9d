/**
 * A model's worker processes (the base of Model → Dispatcher → WorkerSet), kept at their target
 * count (MMS's WorkLoadManager.modelChanged).
 * reconcile() is the only place a worker starts or is told to go. A worker moved out of a recycled
 * host still serves, so it is not counted: its successor starts at once, and it retires once that
 * one has loaded. Restarts wait on a Fibonacci back-off; after kFailedAfter failed ones with no
 * worker ready the model is marked failed (it goes on retrying, and recovers on its own).
 */
import { MmeError } from '../../errors';
import type { LoadedMessage } from '../../protocol/messages';
import type { Clock } from '../../util/clock';
import { Backoff } from '../processes/backoff';
import { describeExit, type WorkerExit } from '../processes/exit-reason';
import type { ModelSlot } from '../hosts/model-slot';

export interface WorkerSetDeps {
  log(line: string): void;
  /** Calls `wake` once when a shared host started or freed a slot. */
  waitForRoom?(wake: () => void): void;
  /** A restart after a death has started a worker. */
  onRestarted(): void;
  clock: Clock;
}

/** Consecutive failed restarts, with no worker ready, after which the model is marked failed. */
const kFailedAfter = 3;

export abstract class WorkerSet {
  readonly workers: ModelSlot[] = [];
  #target: number;
  /** Deaths are replaced from now on (a death during start() fails the load). */
  #running = false;
  #stopped = false;
  readonly #backoff: Backoff;
  /** Workers being moved (onRelocate()), each with its successor once reconcile() has started it. */
  readonly #moving = new Map<ModelSlot, ModelSlot | null>();
  /** Workers an autoscale move asked for: one with nowhere to go stays (a recycled host's must go). */
  readonly #staysIfNowhere = new Set<ModelSlot>();
  /** Replacements not yet stable: their death is a failed restart. */
  readonly #onProbation = new Set<ModelSlot>();
  #failed = false;
  /** A start found no room: the restart waiting on the back-off runs as soon as the room waited for comes. */
  #waitingForRoom = false;
  /** Workers start() began as a second try of a displaced load: a second displacement fails the load. */
  readonly #secondTries = new Set<ModelSlot>();
  #rr = 0;

  constructor(
    readonly name: string,
    protected readonly deps: WorkerSetDeps,
    target: number,
  ) {
    this.#target = target;
    this.#backoff = new Backoff(deps.clock);
  }

  protected abstract spawnWorker(): ModelSlot;
  protected abstract workerLoaded(worker: ModelSlot, msg: LoadedMessage): void;
  /** kFailedAfter failed restarts in a row with no worker ready: until one loads, its model has none working. */
  protected abstract workersFailed(err: MmeError): void;

  /** The worker count it runs toward (min_worker, or what autoscale set since). */
  get workerTarget(): number {
    return this.#target;
  }

  /** Rejects with the first failure. */
  async start(abort: AbortSignal): Promise<void> {
    const { started } = this.reconcile();
    const aborted = new Promise<never>((_, reject) =>
      abort.addEventListener('abort', () => reject(abort.reason as Error), { once: true }),
    );
    aborted.catch(() => undefined);
    try {
      abort.throwIfAborted();
      await Promise.race([allLoaded(started.map((w) => this.#loadedOrMoved(w))), aborted]);
    } finally {
      this.#secondTries.clear();
    }
    this.#running = true;
  }

  /**
   * `worker`'s load; if its shared host died of another model's doing meanwhile, the loads of the
   * successors reconcile() starts for it (once: a second such death fails the load). Workers
   * displaced together get their successors from the first of them to ask.
   */
  async #loadedOrMoved(worker: ModelSlot): Promise<void> {
    try {
      await worker.ready;
    } catch (err) {
      if (!worker.displaced || this.#stopped || this.#secondTries.has(worker)) throw err;
      this.deps.log(
        `[${this.name}] its shared host died while it loaded, through no fault of this model (${(err as MmeError).message}); loading it in another host`,
      );
      const { started } = this.reconcile();
      for (const w of started) this.#secondTries.add(w);
      await Promise.all(started.map((w) => this.#loadedOrMoved(w)));
    }
  }

  /** Autoscale, or the scale API: run `target` workers. Resolves when the started ones have loaded and the retired ones exited. */
  async resize(target: number): Promise<void> {
    this.#target = target;
    const { started, retired } = this.reconcile();
    await Promise.all(retired.map((w) => w.exited));
    await allLoaded(started.map((w) => w.ready));
  }

  /** Starts none while a back-off is pending, nor once stopped (stop() ends every worker). */
  reconcile(): { started: ModelSlot[]; retired: ModelSlot[] } {
    const started: ModelSlot[] = [];
    const retired: ModelSlot[] = [];
    if (this.#stopped) return { started, retired };
    for (const [w, successor] of this.#moving) if (!successor) this.#startSuccessor(w, started);
    // A worker being moved is counted by its successor.
    const live = this.workers.filter((w) => w.state !== 'stopping' && !this.#moving.has(w));
    if (!this.#backoff.waiting) for (let n = live.length; n < this.#target; n++) started.push(this.#spawn());
    if (live.length > this.#target) {
      const rank = (w: ModelSlot) => (w.state !== 'ready' ? 0 : w.isVacant ? 1 : 2);
      for (const w of [...live].sort((a, b) => rank(a) - rank(b)).slice(0, live.length - this.#target)) {
        w.retire();
        retired.push(w);
        this.stopIfDone(w);
      }
    }
    return { started, retired };
  }

  /** Moves `worker` out of a recycled host; it serves until its successor has loaded, so no request waits. */
  onRelocate(worker: ModelSlot): void {
    if (this.#stopped || this.#moving.has(worker) || !this.workers.includes(worker)) return;
    this.#moving.set(worker, null);
    this.#reconcileOrRetry();
  }

  /**
   * Moves every worker to wherever spawn() starts them now (an autoscale promotion or demotion); one
   * with nowhere to go stays and serves on. True if every worker moved.
   */
  async moveAll(): Promise<boolean> {
    const moving = this.workers.filter((w) => w.state !== 'stopping' && !this.#moving.has(w));
    for (const w of moving) this.#staysIfNowhere.add(w);
    for (const w of moving) this.onRelocate(w);
    const moved = moving.filter((w) => this.#moving.has(w));
    for (const w of moving) this.#staysIfNowhere.delete(w);
    const successors = moved.flatMap((w) => this.#moving.get(w) ?? []);
    await Promise.allSettled(successors.map((s) => s.ready));
    await Promise.all(moved.map((w) => w.exited));
    return moved.length === moving.length;
  }

  #startSuccessor(worker: ModelSlot, started: ModelSlot[]): void {
    const handOver = () => {
      this.#moving.delete(worker);
      worker.retire();
      this.stopIfDone(worker);
    };
    let successor: ModelSlot;
    try {
      successor = this.#spawn();
    } catch (err) {
      if (this.#staysIfNowhere.has(worker)) {
        this.#moving.delete(worker);
        this.deps.log(`[${this.name}] worker ${worker.id} stays where it is: ${(err as Error).message}`);
        return;
      }
      handOver();
      this.deps.log(`[${this.name}] could not start a worker to move to: ${(err as Error).message}`);
      this.#waitForRoom();
      return;
    }
    this.#moving.set(worker, successor);
    started.push(successor);
    successor.ready.then(handOver, () => {
      // The successor could not load: the move goes on as a restart would.
      handOver();
      this.#reconcileOrRetry();
    });
  }

  protected stopIfDone(worker: ModelSlot): void {
    if (worker.state === 'stopping' && worker.inFlightBatches === 0) void worker.stop();
  }

  /** The idle worker whose process (a shared host: all models) holds fewest batches, rotating among ties, or null. */
  pickIdle(): ModelSlot | null {
    const n = this.workers.length;
    let best: ModelSlot | null = null;
    let bestK = 0;
    for (let k = 0; k < n; k++) {
      const w = this.workers[(this.#rr + k) % n];
      if (w.isIdle && (!best || w.host.batches.size < best.host.batches.size)) {
        best = w;
        bestK = k;
        if (w.host.batches.size === 0) break;
      }
    }
    if (best) this.#rr = (this.#rr + bestK + 1) % n;
    return best;
  }

  /** Replaces it if the server did not mean it to end. */
  protected workerExited(worker: ModelSlot, exit: WorkerExit): void {
    const i = this.workers.indexOf(worker);
    if (i >= 0) this.workers.splice(i, 1);
    this.#moving.delete(worker);
    const onProbation = this.#onProbation.delete(worker);
    if (this.#stopped || !this.#running) return;
    // A replacement whose load failed was stopped by the server, yet it is a failed restart all the same.
    const loadFailed = onProbation && worker.loadError !== null && worker.loadError.code !== 'MME_ERR_SHUTTING_DOWN';
    if (exit.reason === 'stopped' && !loadFailed) return;
    const how = describeExit(exit);
    this.deps.log(
      `[${this.name}] worker ${worker.id} (pid ${worker.pid}) ${how}; restarting (exit reason: ${exit.reason})`,
    );
    if (onProbation) this.#restartFailed(worker, how);
    this.#scheduleRestart();
  }

  #restartFailed(worker: ModelSlot, how: string): void {
    this.#backoff.failed();
    const err =
      worker.loadError ?? new MmeError('MME_ERR_WORKER_DIED', `worker ${worker.id} ${how} right after loading`);
    this.deps.log(
      `[${this.name}] replacement worker ${worker.loadError ? 'failed to load' : 'died'} (attempt ${this.#backoff.attempt}): ${err.message}`,
    );
    const anyReady = this.workers.some((w) => w.state === 'ready');
    if (this.#failed || anyReady || this.#backoff.attempt < kFailedAfter) return;
    this.#failed = true;
    this.workersFailed(err);
  }

  #scheduleRestart(): void {
    if (this.#stopped) return;
    this.#backoff.wait(() => {
      // The restart runs: a wake for room from now on is for a later one that asks again.
      this.#waitingForRoom = false;
      const started = this.#reconcileOrRetry();
      for (const w of started) this.#onProbation.add(w);
      if (started.length > 0) this.deps.onRestarted();
    });
  }

  /** reconcile(), or, when there is nowhere to start a worker now (no shared host has room), a retry after a back-off. */
  #reconcileOrRetry(): ModelSlot[] {
    try {
      return this.reconcile().started;
    } catch (err) {
      this.#backoff.failed();
      this.deps.log(`[${this.name}] could not start a replacement worker: ${(err as Error).message}`);
      this.#waitForRoom();
      return [];
    }
  }

  /** A restart after the back-off, or sooner if the room that was missing comes first. */
  #waitForRoom(): void {
    this.#scheduleRestart();
    if (!this.deps.waitForRoom) return;
    this.#waitingForRoom = true;
    this.deps.waitForRoom(this.#onRoom);
  }

  /** One function, so the pool holds it once however often this set asks. */
  readonly #onRoom = () => {
    if (this.#waitingForRoom) this.#backoff.cutShort();
  };

  #spawn(): ModelSlot {
    const worker = this.spawnWorker();
    this.workers.push(worker);
    worker.ready.then(
      (loaded) => {
        if (this.#onProbation.has(worker)) this.#backoff.watch(() => this.#onProbation.delete(worker));
        // A load after workersFailed() is its recovery: workerLoaded() marks the model ready again.
        this.#failed = false;
        this.workerLoaded(worker, loaded);
      },
      () => undefined,
    );
    return worker;
  }

  protected async stopWorkers(): Promise<void> {
    this.#stopped = true;
    this.#target = 0;
    this.#backoff.close();
    await Promise.all(this.workers.slice().map((w) => w.stop()));
  }
}

/** Waits for every one of `loads`, then rejects with the first failure. */
async function allLoaded(loads: Promise<unknown>[]): Promise<void> {
  const failure = (await Promise.allSettled(loads)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason as MmeError;
}
