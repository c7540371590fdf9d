/**
 * Memory admission: a load, or a scale-up, reserves its estimated memory before any process
 * starts, or gets 507. With the self-managed cache on, it first evicts idle models in policy
 * order. Reservations are serialised, so two concurrent loads cannot both take the last free
 * megabytes.
 *
 * A request that would not fit with every evictable model gone (larger than the budget, or than
 * what loading and leaving models leave of it) is refused before anything is evicted: a 507 that
 * emptied the cache first would cost every model it evicted for nothing.
 *
 * Victims are chosen one at a time and re-checked under their own name's lock: a model that is
 * being unloaded, scaled or loaded meanwhile is skipped, never acted on twice.
 */
import { MmeError } from '../../errors';
import type { Clock } from '../../util/clock';
import { Semaphore } from '../../util/semaphore';
import type { EvictionPolicy } from './eviction-policy';
import { mb } from '../../util/mb';

/** What admission needs of a model's registration (models/registration.ts's Registration). */
export interface Resident {
  readonly name: string;
  readonly phase: 'loading' | 'ready' | 'failed' | 'draining' | 'stopping' | 'gone';
  /** Serving: ready, or failed and retrying its workers. */
  readonly serving: boolean;
  /** Requests holding it. */
  readonly active: number;
  /** What the budget counts for it: its reservation plus what its workers measure. */
  readonly heldBytes: number;
  /** Adds to its reservation (bytes). */
  reserve(bytes: number): void;
  readonly model: {
    readonly memoryBytes: number;
    readonly memoryMeasuredAt: number;
    readonly memoryMoves: boolean;
    refreshMemory(): Promise<number>;
  } | null;
}

/** Memory measurements older than this are refreshed before deciding whether a load fits. */
const kMemoryFreshMs = 5000;

export interface AdmissionDeps<Entry extends Resident> {
  budgetBytes: number;
  maxLoadedModels: number;
  /** The self-managed cache may evict to make room. */
  evicts: boolean;
  policy: EvictionPolicy;
  /** The server's clock: the policy's time and the age of memory measurements. */
  clock: Clock;
  /** Every entry that holds or reserves memory, leaving ones included. */
  entries(): Iterable<Entry>;
  /** Memory held whatever is loaded: the shared hosts' own (bytes). */
  fixedBytes(): number;
  /** The name's current entry. */
  current(name: string): Entry | undefined;
  /** The name's lock if free now. */
  tryLock(name: string): (() => void) | null;
  /** Drains and stops `entry` (its lock is held); `why` says what it made room for and why this one, for the log. */
  evict(entry: Entry, why: string): Promise<void>;
}

/**
 * What a reservation is for, as its 507 says. `autoscale`: a worker the server chose to add, which
 * may evict only idle models, never one busier than the model it is for.
 */
export type Purpose = { kind: 'load' } | { kind: 'scale'; workers: number; autoscale?: boolean };

export class Admission<Entry extends Resident> {
  readonly #lock = new Semaphore(1);

  constructor(private readonly deps: AdmissionDeps<Entry>) {}

  /**
   * Makes room for `needBytes` more than `entry` holds now and adds it to its reservation, or throws
   * 507. `purpose` says what the memory is for in that error ("load", or a scale to N workers).
   */
  async reserve(
    entry: Entry,
    needBytes: number,
    abort: AbortSignal,
    purpose: Purpose = { kind: 'load' },
  ): Promise<void> {
    const release = await this.#lock.acquire();
    try {
      const { budgetBytes, maxLoadedModels } = this.deps;
      let used = 0;
      let count = 0;
      const fits = () =>
        used + entry.heldBytes + needBytes <= budgetBytes && (maxLoadedModels === 0 || count < maxLoadedModels);
      if (this.deps.evicts && !this.#fitsWithoutEvictable(entry, needBytes)) {
        throw this.#noRoom(entry, needBytes, await this.#usedBytes(entry), this.#countedModels(entry), purpose, false);
      }
      // Re-measured after every eviction: an unload that finished meanwhile freed memory too.
      for (;;) {
        used = await this.#usedBytes(entry);
        count = this.#countedModels(entry);
        if (fits() || !this.deps.evicts || abort.aborted) break;
        const victim = this.#nextVictim(entry.name, purpose.kind === 'scale' && purpose.autoscale === true);
        if (!victim) break;
        const full =
          maxLoadedModels > 0 && count >= maxLoadedModels
            ? `max_loaded_models=${maxLoadedModels} are loaded`
            : `it needs about ${mb(needBytes)} and ${mb(used + entry.heldBytes)} of the ${mb(budgetBytes)} model memory budget is in use`;
        try {
          await this.deps.evict(victim.entry, `to make room for ${entry.name} (${full}): ${victim.why}`);
        } finally {
          victim.release();
        }
      }
      abort.throwIfAborted();
      if (!fits()) throw this.#noRoom(entry, needBytes, used, count, purpose);
      entry.reserve(needBytes);
    } finally {
      release();
    }
  }

  /**
   * The best victim now, idle before busy (idle only when `idleOnly`), with its lock held; never the
   * loading name, never one in transition.
   */
  #nextVictim(loading: string, idleOnly: boolean): { entry: Entry; release: () => void; why: string } | null {
    const order = this.deps.policy.victims(this.deps.clock.now()).filter((n) => n !== loading);
    const ready = order.map((n) => this.deps.current(n)).filter((e): e is Entry => e?.phase === 'ready');
    const idle = ready.filter((x) => x.active === 0);
    for (const e of idleOnly ? idle : [...idle, ...ready.filter((x) => x.active > 0)]) {
      const release = this.deps.tryLock(e.name);
      if (!release) continue;
      if (this.deps.current(e.name) === e && e.phase === 'ready')
        return { entry: e, release, why: this.#why(e, order) };
      release();
    }
    return null;
  }

  /**
   * Whether the request would fit once every model eviction can take (the ready ones) were gone:
   * what stays is the fixed memory and the entries loading, failed or leaving.
   */
  #fitsWithoutEvictable(entry: Entry, needBytes: number): boolean {
    const { budgetBytes, maxLoadedModels } = this.deps;
    let stays = this.deps.fixedBytes();
    let count = 0;
    for (const e of this.deps.entries()) {
      if (e === entry || e.phase === 'ready') continue;
      stays += e.heldBytes;
      if (e.serving || e.phase === 'loading') count++;
    }
    return stays + entry.heldBytes + needBytes <= budgetBytes && (maxLoadedModels === 0 || count < maxLoadedModels);
  }

  /** Why the policy's order put `victim` here: an eviction that surprises (the busiest model) can be read from the log. */
  #why(victim: Entry, order: readonly string[]): string {
    const rank = order.indexOf(victim.name) + 1;
    const shown = order.slice(0, 5).join(', ') + (order.length > 5 ? `, … (${order.length})` : '');
    const busy = victim.active > 0 ? ', busy: every model before it was busy or changing' : ', idle';
    return `eviction_policy=${this.deps.policy.name} ranks it ${rank} of ${order.length}${busy}; eviction order ${shown}`;
  }

  #noRoom(
    entry: Entry,
    needBytes: number,
    used: number,
    count: number,
    purpose: Purpose,
    evictionWouldHelp = true,
  ): MmeError {
    const { maxLoadedModels, evicts, budgetBytes } = this.deps;
    const scaling = purpose.kind === 'scale';
    const what =
      maxLoadedModels > 0 && count >= maxLoadedModels
        ? `${count} models are loaded and max_loaded_models is ${maxLoadedModels}`
        : `${scaling ? 'the new workers need' : 'it needs'} about ${mb(needBytes)} and ${mb(used + entry.heldBytes)} of the ${mb(budgetBytes)} model memory budget is in use`;
    const fix = evicts
      ? 'every other model is busy or loading, so nothing could be evicted; retry later, or raise model_memory_budget_mb / max_loaded_models'
      : 'unload a model (DELETE /models/{name}), or raise model_memory_budget_mb / max_loaded_models';
    const subject = scaling
      ? `Model ${entry.name} cannot scale to ${purpose.workers} workers`
      : `Model ${entry.name} does not fit`;
    if (!evictionWouldHelp) {
      return new MmeError(
        'MME_ERR_INSUFFICIENT_MEMORY',
        `${subject}: ${what}, and it would not fit with every other model evicted either, so none was. ${scaling ? 'Its workers are unchanged; scale to fewer workers, or raise' : 'Raise'} model_memory_budget_mb / max_loaded_models.`,
      );
    }
    return new MmeError(
      'MME_ERR_INSUFFICIENT_MEMORY',
      `${subject}: ${what}. ${scaling ? 'Its workers are unchanged; scale to fewer workers, or ' : ''}${fix}.`,
    );
  }

  /**
   * Memory every other registration holds, serving ones re-measured (all at once) when their figure
   * is stale and can move. With thousands of models in shared hosts, whose figures never move, this
   * is one pass with no await: every load takes it under the admission lock.
   */
  async #usedBytes(except: Entry): Promise<number> {
    const now = this.deps.clock.now();
    const stale: Entry[] = [];
    for (const e of this.deps.entries()) {
      if (e !== except && e.model?.memoryMoves && e.serving && now - e.model.memoryMeasuredAt > kMemoryFreshMs)
        stale.push(e);
    }
    if (stale.length > 0) {
      await Promise.all(
        stale.map(async (e) => {
          await e.model!.refreshMemory();
          this.deps.policy.resize(e.name, e.model!.memoryBytes);
        }),
      );
    }
    let used = this.deps.fixedBytes();
    for (const e of this.deps.entries()) if (e !== except) used += e.heldBytes;
    return used;
  }

  #countedModels(except: Entry): number {
    let n = 0;
    for (const e of this.deps.entries()) if (e !== except && (e.serving || e.phase === 'loading')) n++;
    return n;
  }
}
