/**
 * One model's life in a slot of a worker process (ModelSlot's state): the worker table
 * (worker-state.ts), the load — its `ready` promise, settled once, and its timer — retirement,
 * its capacity and its memory figure. What the host's policy decides (how a stop is done, what
 * memory means) stays with ModelSlot.
 */
import type { MmeError } from '../../errors';
import type { LoadedMessage } from '../../protocol/messages';
import type { Clock, Timer } from '../../util/clock';
import type { WorkerExit } from '../processes/exit-reason';
import { workerStates, type WorkerState } from '../processes/worker-state';

/** What the rest of the server reads of a worker's lifecycle; only the worker changes it. */
export type SlotView = Pick<SlotLifecycle, 'state' | 'ready' | 'loaded' | 'loadError' | 'capacity' | 'memoryBytes'>;

export class SlotLifecycle {
  readonly ready: Promise<LoadedMessage>;
  readonly #state;
  #loaded: LoadedMessage | null = null;
  #loadError: MmeError | null = null;
  #settled = false;
  #timer: Timer | null = null;
  #capacity: number;
  #memoryBytes = 0;
  #resolve!: (m: LoadedMessage) => void;
  #reject!: (e: MmeError) => void;

  constructor(
    what: () => string,
    initial: WorkerState,
    capacity: number,
    private readonly clock: Clock,
  ) {
    this.#state = workerStates(what, initial);
    this.#capacity = capacity;
    this.ready = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.ready.catch(() => undefined);
  }

  get state(): WorkerState {
    return this.#state.state;
  }

  get loaded(): LoadedMessage | null {
    return this.#loaded;
  }

  get loadError(): MmeError | null {
    return this.#loadError;
  }

  /** Batches it may hold at once: the pipeline depth, or a preload_model process's concurrent runs. */
  get capacity(): number {
    return this.#capacity;
  }

  resize(capacity: number): void {
    this.#capacity = capacity;
  }

  /**
   * What it costs (bytes), as last measured. A dedicated worker: its process's PSS, refreshed on
   * describe and before admission decides. A model in a shared host: the cost measured at its
   * load (the host's growth, at least file size plus the smallest session), fixed from then on.
   */
  get memoryBytes(): number {
    return this.#memoryBytes;
  }

  measured(bytes: number): void {
    this.#memoryBytes = bytes;
  }

  /** The load has an outcome: Loaded, or a failure. */
  get settled(): boolean {
    return this.#settled;
  }

  /** Arms the load's bound: `expired` runs if neither Loaded nor a failure came first. */
  bound(ms: number, expired: () => void): void {
    this.#timer = this.clock.setTimeout(expired, ms);
  }

  /** The Load is on its way (a worker retired while it started stays stopping: it loads, but serves nothing). */
  loading(): void {
    if (this.state === 'starting') this.#state.to('loading');
  }

  /** Loaded arrived; false when the load had already an outcome (a late answer is ignored). */
  succeed(msg: LoadedMessage): boolean {
    if (this.#settled) return false;
    this.#settle();
    this.#loaded = msg;
    if (this.state === 'loading') this.#state.to('ready');
    this.#resolve(msg);
    return true;
  }

  /** The load failed; false when it had already an outcome. */
  fail(err: MmeError): boolean {
    if (this.#settled) return false;
    this.#settle();
    this.#loadError = err;
    this.#state.to('failed');
    this.#reject(err);
    return true;
  }

  /** Out of dispatch: it finishes what it holds, then goes. */
  retire(): void {
    if (this.#state.can('stopping')) this.#state.to('stopping');
  }

  /** Ready and able to take a batch, given what it holds. */
  idle(inFlight: number): boolean {
    return this.state === 'ready' && inFlight < this.#capacity;
  }

  /** Its process exited, or its slot was released: stopped when the server stopped it, failed otherwise (a failed load stays failed). */
  ended(exit: WorkerExit): void {
    this.#settle();
    if (this.state !== 'failed') this.#state.to(exit.reason === 'stopped' ? 'stopped' : 'failed');
  }

  #settle(): void {
    this.#settled = true;
    this.clock.clearTimeout(this.#timer);
  }
}
