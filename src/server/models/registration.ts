/**
 * The lifecycle of one model name's registration. Every transition goes through to(), on the
 * shared StateMachine, which refuses any move the table does not list:
 *
 *   loading ──▶ ready ◀──▶ failed          (failed: its workers keep dying; it recovers on its own)
 *      │          │          │
 *      │          └──▶ draining ◀──┘       (unload, eviction, shutdown: admitted requests finish)
 *      │                  │
 *      └──────────▶ stopping ──▶ gone     (processes killed and reaped, files removed)
 *
 * An entry is one registration: a name loaded again gets a new entry, and whoever removes an entry
 * removes that entry, never whatever now holds its name. Each transition that others wait for has
 * one promise, made once: `loadSettled` (it left loading) and `gone`.
 */
import { MmeError, isMmeError } from '../../errors';
import type { ModelArtifact } from '../../artifacts/model-artifact';
import type { Clock, Timer } from '../../util/clock';
import { deferred, type Deferred } from '../../util/deferred';
import { StateMachine } from '../../util/state-machine';
import { within } from '../../util/within';
import type { Resident } from '../cache/admission';
import type { Model } from './model';

export type Phase = 'loading' | 'ready' | 'failed' | 'draining' | 'stopping' | 'gone';

const kNext: Readonly<Record<Phase, readonly Phase[]>> = {
  loading: ['ready', 'stopping'],
  ready: ['failed', 'draining'],
  failed: ['ready', 'draining'],
  draining: ['stopping'],
  stopping: ['gone'],
  gone: [],
};

/** Who is told of each change the registry's tallies depend on (registry.ts). */
export interface RegistrationListener {
  phaseChanged(entry: Registration, from: Phase, to: Phase): void;
  /** Its heldBytes changed: a reservation, or its model's memory figure; `admitted`: its load's first reservation. */
  heldChanged(entry: Registration, admitted?: boolean): void;
}

export class Registration implements Resident {
  readonly #phase = new StateMachine<Phase>(() => `model ${this.name}`, 'loading', kNext);
  model: Model | null = null;
  /** Its load's files, once resolved. */
  artifact: ModelArtifact | null = null;
  /** Memory reserved while loading or scaling up (the estimate); 0 once the model is measured. */
  #reservedBytes = 0;
  /** Its load passed memory admission (it reserved): from then on it counts against max_loaded_models. */
  loadAdmitted = false;
  /** Why its load failed (loadFailed). */
  loadError: MmeError | null = null;
  /** Why the workers keep failing (phase failed). */
  lastError: MmeError | null = null;
  /** Requests holding the model: from acquire to their answer, queued and running included. */
  #active = 0;
  /** Requests waiting for the load that hold the model from the instant it is ready (holdWhenReady). */
  #heldWhenReady = 0;
  #wentReady = false;
  /** Aborted by shutdown or a concurrent unload: the load stops at its next step and kills its workers. */
  readonly abortLoad = new AbortController();
  /** loadSettled: true when the load succeeded, false when it failed. */
  readonly #loadSettled = deferred<boolean>();
  readonly loadSettled = this.#loadSettled.promise;
  readonly #gone = deferred<void>();
  readonly gone = this.#gone.promise;
  /** What drains wait for: made by the first, settled by the release that leaves no request holding it. */
  #idle: Deferred<boolean> | null = null;
  /** idle_unload_seconds: called once no request has held it for `ms`; the timer looks lazily (a request arms none). */
  #idleUnload: { ms: number; unload: () => void; timer: Timer | null } | null = null;
  /** clock.now() when its last request finished, or it went ready: the idle age eviction reports and idle unload uses. */
  #idleSince = 0;
  /** The registry, told of each change its tallies depend on. */
  listener: RegistrationListener | null = null;

  constructor(
    readonly name: string,
    readonly url: string,
    readonly onDemand: boolean,
    readonly loadedAtStartup: boolean,
    private readonly clock: Clock,
  ) {}

  get active(): number {
    return this.#active;
  }

  get phase(): Phase {
    return this.#phase.state;
  }

  memoryChanged(): void {
    this.listener?.heldChanged(this);
  }

  built(model: Model): void {
    this.model = model;
    this.listener?.heldChanged(this);
  }

  /**
   * Its load failed: what its callers and waiters get (server paths hidden). Logged here, once for
   * every kind of load: on SageMaker the server log is the only place a user can read why.
   */
  loadFailed(thrown: unknown, log: (line: string) => void): MmeError {
    const reason: unknown = this.abortLoad.signal.aborted ? this.abortLoad.signal.reason : thrown;
    const err: unknown = this.artifact?.hidePaths(reason) ?? reason;
    const kind = this.onDemand ? 'on-demand load' : this.loadedAtStartup ? 'start-up load' : 'load';
    const cause = isMmeError(err) && err.cause instanceof Error ? ` (${err.cause.message})` : '';
    log(
      `[${this.name}] ${kind} from ${this.url} failed: ${isMmeError(err) ? `${err.code}: ${err.message}${cause}` : ((err as Error)?.stack ?? String(err))}`,
    );
    this.loadError = isMmeError(err)
      ? err
      : new MmeError('MME_ERR_INTERNAL', 'Internal server error; the server log has the details.');
    return this.loadError;
  }

  /** A reservation while loading is the load's admission. */
  reserve(bytes: number): void {
    this.#reservedBytes += bytes;
    const admits = this.#phase.state === 'loading' && !this.loadAdmitted;
    this.loadAdmitted ||= admits;
    this.listener?.heldChanged(this, admits);
  }

  /** Gives back up to `bytes` of the reservation (what it stood for is measured now); all of it when omitted. */
  unreserve(bytes = this.#reservedBytes): void {
    this.#reservedBytes = Math.max(0, this.#reservedBytes - bytes);
    this.listener?.heldChanged(this);
  }

  get failed(): boolean {
    return this.#phase.state === 'failed';
  }

  /** What the memory budget counts for it: its reservation, and what its workers measure. */
  get heldBytes(): number {
    return this.#reservedBytes + (this.model?.memoryBytes ?? 0);
  }

  /** Serving or able to serve: ready, or failed and retrying its workers. */
  get serving(): boolean {
    return this.#phase.state === 'ready' || this.#phase.state === 'failed';
  }

  /**
   * Counts against max_loaded_models: serving, or loading past its admission. A load waiting for its
   * name's lock or a load permit holds nothing yet: counting it would refuse the load ahead with 507.
   */
  get countsAsLoaded(): boolean {
    return this.serving || (this.#phase.state === 'loading' && this.loadAdmitted);
  }

  to(next: Phase): void {
    const from = this.#phase.state;
    this.#phase.to(next);
    if (from === 'loading') {
      // Before anyone hears of the change: an eviction woken by it must see the waiters' holds.
      this.#wentReady = next === 'ready';
      if (this.#wentReady) this.#active += this.#heldWhenReady;
      this.#idleSince = this.clock.now();
      this.#heldWhenReady = 0;
    }
    if (next === 'draining') this.clock.clearTimeout(this.#idleUnload?.timer ?? null);
    this.listener?.phaseChanged(this, from, next);
    if (from === 'loading') this.#loadSettled.resolve(next === 'ready');
    if (next === 'gone') this.#gone.resolve();
  }

  markFailed(err: MmeError): void {
    // Describe and invokes show it: a worker's load error may name the server's copy of the files.
    this.lastError = (this.artifact?.hidePaths(err) ?? err) as MmeError;
    if (this.#phase.state === 'ready') this.to('failed');
  }

  markRecovered(): void {
    if (this.#phase.state === 'failed') this.to('ready');
  }

  hold(): void {
    this.#active++;
  }

  /**
   * A waiting request holds the model from the instant the load succeeds, or a load waiting for room
   * would evict it first; the returned function gives the hold back when it stops waiting.
   */
  holdWhenReady(): () => void {
    this.#heldWhenReady++;
    return () => {
      if (this.#phase.state === 'loading') this.#heldWhenReady--;
      else if (this.#wentReady) this.release();
    };
  }

  release(): void {
    if (--this.#active > 0) return;
    this.#idleSince = this.clock.now();
    this.#idle?.resolve(true);
    this.#idle = null;
  }

  /** Goes draining (unload, eviction, shutdown): true once no request holds the model, false after `boundMs`. */
  drain(boundMs: number): Promise<boolean> {
    this.to('draining');
    if (this.#active === 0) return Promise.resolve(true);
    this.#idle ??= deferred<boolean>();
    return within(this.#idle.promise, boundMs, false, this.clock);
  }

  /** Calls `unload` once no request has held it for `ms` (idle_unload_seconds), while it serves. */
  unloadWhenIdle(ms: number, unload: () => void): void {
    this.#idleUnload = { ms, unload, timer: null };
    this.checkIdle();
  }

  /** How long no request has held it (ms): 0 while one does. */
  get idleMs(): number {
    return this.#active > 0 ? 0 : this.clock.now() - this.#idleSince;
  }

  /** Calls its unload if it has been idle long enough, else looks again when it could have been. */
  checkIdle(): void {
    const idle = this.#idleUnload;
    if (!idle || !this.serving) return;
    this.clock.clearTimeout(idle.timer);
    const left = idle.ms - this.idleMs;
    idle.timer = left > 0 ? this.clock.setTimeout(() => this.checkIdle(), left) : null;
    if (idle.timer) idle.timer.unref();
    else idle.unload();
  }
}
