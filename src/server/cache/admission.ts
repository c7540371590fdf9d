/**
 * Memory admission: a load or a scale-up reserves its estimated memory before any process starts,
 * or gets 507; with the self-managed cache on, it first evicts idle models in policy order.
 * Reservations are serialised, so two concurrent loads cannot both take the last free megabytes.
 *
 * A request that would not fit with every evictable model gone is refused before anything is
 * evicted: a 507 that emptied the cache first would cost every model it evicted for nothing.
 * With the cache on, a load whose room is held by loads in progress or leaving models waits for
 * them instead (outside SageMaker nobody retries a 507), in the order loads asked; a scale never
 * waits. Victims are re-checked under their own name's lock, so a model another operation holds is
 * skipped, never acted on twice; pinned models are never victims.
 */
import { once } from 'node:events';
import type { Clock } from '../../util/clock';
import { Semaphore } from '../../util/semaphore';
import type { ClassedPolicy } from './eviction-classes';
import { MmeError } from '../../errors';
import { mb } from '../../util/mb';

/** What admission needs of a model's registration (models/registration.ts). */
export interface Resident {
  readonly name: string;
  readonly phase: 'loading' | 'ready' | 'failed' | 'draining' | 'stopping' | 'gone';
  readonly serving: boolean;
  readonly countsAsLoaded: boolean;
  /** Requests holding it. */
  readonly active: number;
  readonly heldBytes: number;
  /** Adds to its reservation (bytes); while loading, this admits it. */
  reserve(bytes: number): void;
  readonly model: {
    readonly memoryBytes: number;
    readonly memoryMeasuredAt: number;
    readonly memoryMoves: boolean;
    refreshMemory(): Promise<number>;
  } | null;
}

/**
 * What admission reads of every registration that holds memory (leaving ones included), kept up to
 * date as they change (registry.ts), so a reservation costs the same with 100 000 models as with ten.
 */
export interface Tally<Entry> {
  has(entry: Entry): boolean;
  /** What `holders` hold (bytes) and how many of them count against max_loaded_models. */
  held(holders: Holders): Held;
  /** Resolves at the next settle of an admitted load or a leaving entry; null when none is under way. */
  nextSettle(): Promise<void> | null;
  /** Serving ones whose memory figure moves (dedicated workers): re-measured when stale. */
  readonly moving: Iterable<Entry>;
}

/** All; those no eviction can free (not ready); failed ones, which do not settle on their own either. */
export type Holders = 'all' | 'notReady' | 'failed';
/** Bytes held, and how many count against max_loaded_models. */
type Held = { bytes: number; count: number };

/** Memory measurements older than this are refreshed before deciding whether a load fits. */
const kMemoryFreshMs = 5000;

export interface AdmissionDeps<Entry extends Resident> {
  readonly budgetBytes: number;
  readonly maxLoadedModels: number;
  /** The self-managed cache may evict to make room. */
  readonly evicts: boolean;
  policy: ClassedPolicy;
  clock: Clock;
  tally: Tally<Entry>;
  /** Memory held whatever is loaded: the shared hosts' own (bytes). */
  fixedBytes(): number;
  current(name: string): Entry | undefined;
  /** The name's lock if free now. */
  tryLock(name: string): (() => void) | null;
  /** Drains and stops `entry` (its lock is held); `why` is for the log. */
  evict(entry: Entry, why: string): Promise<void>;
}

export class Admission<Entry extends Resident> {
  readonly #lock = new Semaphore(1);
  /** Loads that wait for room keep their order through the wait, without holding #lock meanwhile. */
  readonly #loadsInOrder = new Semaphore(1);

  constructor(private readonly deps: AdmissionDeps<Entry>) {}

  /**
   * Makes room for `needBytes` more than `entry` holds now and adds it to its reservation, or throws
   * 507. Every decision is taken under one lock, which a load's wait does not hold, so a scale (or
   * an autoscale round) is answered at once meanwhile.
   */
  async reserve(
    entry: Entry,
    needBytes: number,
    abort: AbortSignal,
    purpose: Purpose = { kind: 'load' },
  ): Promise<void> {
    const waits = this.deps.evicts && purpose.kind === 'load';
    const inTurn = waits ? await this.#loadsInOrder.acquire(abort) : null;
    try {
      for (;;) {
        const wait = await this.#tryReserve(entry, needBytes, abort, purpose, waits);
        if (!wait) return;
        if (abort.aborted) continue;
        // Until it settles or `abort` fires, whichever is first, leaving no listener behind.
        const done = new AbortController();
        const aborted = once(abort, 'abort', { signal: done.signal }).catch(() => undefined);
        await Promise.race([wait.settle, aborted]).finally(() => done.abort());
      }
    } finally {
      inTurn?.();
    }
  }

  /**
   * One attempt, under the lock: evicts what it needs and reserves (null), throws 507, or (when
   * `waits`) returns what to wait for: the next load or leaving model to settle (in an object: an
   * async function returning the promise itself would resolve only when it does).
   */
  async #tryReserve(
    entry: Entry,
    needBytes: number,
    abort: AbortSignal,
    purpose: Purpose,
    waits: boolean,
  ): Promise<{ settle: Promise<void> } | null> {
    const release = await this.#lock.acquire();
    try {
      const { budgetBytes, maxLoadedModels } = this.deps;
      let others = { bytes: 0, count: 0 };
      if (this.deps.evicts && !this.#fitsWithoutEvictable(entry, needBytes, waits, this.#pinnedHold(entry))) {
        await this.#refreshStale(entry);
        // Room that pinned models hold is room no eviction frees: the 507 names them.
        const pinned = this.#fitsWithoutEvictable(entry, needBytes, waits, null) ? this.#pinnedHold(entry) : null;
        others = this.#others(entry, 'all');
        throw noRoom(this.deps, entry, needBytes, others, purpose, pinned ? { pinned } : 'fits-never');
      }
      // Re-measured after every eviction: an unload that finished meanwhile freed memory too.
      for (;;) {
        await this.#refreshStale(entry);
        // Nothing awaits from here to the decision: no settle slips between the tallies and nextSettle.
        others = this.#others(entry, 'all');
        if (this.#fits(entry, needBytes, others) || !this.deps.evicts || abort.aborted) break;
        const victim = this.#fitsWithoutEvictable(entry, needBytes, false, this.#pinnedHold(entry))
          ? this.#nextVictim(entry.name, purpose.kind === 'scale' && purpose.autoscale === true)
          : null;
        if (!victim) {
          const settle = waits ? this.deps.tally.nextSettle() : null;
          if (settle) return { settle };
          break;
        }
        const full =
          maxLoadedModels > 0 && others.count >= maxLoadedModels
            ? `max_loaded_models=${maxLoadedModels} are loaded`
            : `it needs about ${mb(needBytes)} and ${mb(others.bytes + entry.heldBytes)} of the ${mb(budgetBytes)} model memory budget is in use`;
        try {
          await this.deps.evict(victim.entry, `to make room for ${entry.name} (${full}): ${victim.why}`);
        } finally {
          victim.release();
        }
      }
      abort.throwIfAborted();
      if (!this.#fits(entry, needBytes, others))
        throw noRoom(this.deps, entry, needBytes, others, purpose, 'no-victim');
      entry.reserve(needBytes);
      return null;
    } finally {
      release();
    }
  }

  /**
   * The best victim now, idle before busy (idle only when `idleOnly`), with its lock held; never the
   * loading name, never one in transition. The policy's order is read only as far as the victim.
   */
  #nextVictim(loading: string, idleOnly: boolean): { entry: Entry; release: () => void; why: string } | null {
    const { policy, clock } = this.deps;
    // With the name's lock, if free and the entry still holds the name and is ready under it.
    const locked = (entry: Entry, rank: number) => {
      const release = this.deps.tryLock(entry.name);
      if (release && this.deps.current(entry.name) === entry && entry.phase === 'ready')
        return { entry, release, why: victimWhy(policy, clock.now(), rank, entry.active > 0) };
      release?.();
      return null;
    };
    const busy: Array<[Entry, number]> = [];
    let rank = 0;
    for (const name of policy.victims(clock.now())) {
      rank++;
      const e = name === loading ? undefined : this.deps.current(name);
      if (e?.phase !== 'ready') continue;
      if (e.active > 0) {
        if (!idleOnly) busy.push([e, rank]);
        continue;
      }
      const victim = locked(e, rank);
      if (victim) return victim;
    }
    for (const [e, r] of busy) {
      const victim = locked(e, r);
      if (victim) return victim;
    }
    return null;
  }

  /**
   * Whether it would fit with every ready model evicted; `afterSettling`, once loads in progress were
   * done (and evictable) and leaving entries gone, so only failed ones stay; `pinned` ones stay too.
   */
  #fitsWithoutEvictable(entry: Entry, needBytes: number, afterSettling: boolean, pinned: PinnedHold | null): boolean {
    const stays = this.#others(entry, afterSettling ? 'failed' : 'notReady');
    stays.bytes += pinned?.heldBytes ?? 0;
    stays.count += pinned?.names.length ?? 0;
    return this.#fits(entry, needBytes, stays);
  }

  #fits(entry: Entry, needBytes: number, others: Held): boolean {
    const { budgetBytes, maxLoadedModels } = this.deps;
    return (
      others.bytes + entry.heldBytes + needBytes <= budgetBytes &&
      (maxLoadedModels === 0 || others.count < maxLoadedModels)
    );
  }

  /** The ready pinned models other than `except`: what no eviction frees (pinned ones are few: a pass over them). */
  #pinnedHold(except: Entry): PinnedHold {
    const names: string[] = [];
    let heldBytes = 0;
    for (const name of this.deps.policy.pinned) {
      const e = this.deps.current(name);
      if (e === undefined || e === except || e.phase !== 'ready') continue;
      names.push(name);
      heldBytes += e.heldBytes;
    }
    return { names, heldBytes };
  }

  /** Re-measures stale figures that can move: never the shared hosts' models (100 000 under the lock). */
  async #refreshStale(except: Entry): Promise<void> {
    const now = this.deps.clock.now();
    const stale: Entry[] = [];
    for (const e of this.deps.tally.moving) {
      if (e !== except && e.model && now - e.model.memoryMeasuredAt > kMemoryFreshMs) stale.push(e);
    }
    if (stale.length === 0) return;
    await Promise.all(
      stale.map(async (e) => {
        await e.model!.refreshMemory();
        this.deps.policy.resize(e.name, e.model!.memoryBytes);
      }),
    );
  }

  /** What `holders` but `entry` hold (fixed bytes included); a ready entry (a scale) is not among the not-ready. */
  #others(entry: Entry, holders: Holders): Held {
    const { tally } = this.deps;
    const held = tally.held(holders);
    const own = tally.has(entry) && (holders === 'all' || (holders === 'notReady' && entry.phase !== 'ready'));
    const count = held.count - (own && entry.countsAsLoaded ? 1 : 0);
    return { bytes: this.deps.fixedBytes() + held.bytes - (own ? entry.heldBytes : 0), count };
  }
}

/**
 * What a reservation is for, as its 507 says. `autoscale`: a worker the server chose to add, which
 * may evict only idle models, never one busier than the model it is for.
 */
export type Purpose = { kind: 'load' } | { kind: 'scale'; workers: number; autoscale?: boolean };

/** The pinned models in the way of a reservation. */
type PinnedHold = { readonly names: readonly string[]; readonly heldBytes: number };

/**
 * The 507: what is full, and what to change. `fits-never`: it would not fit with every evictable
 * model gone (so none was); `pinned`: only evicting pinned models would make room; `no-victim`:
 * nothing could be evicted now.
 */
function noRoom<Entry extends Resident>(
  b: AdmissionDeps<Entry>,
  entry: Entry,
  needBytes: number,
  others: Held,
  purpose: Purpose,
  why: 'fits-never' | 'no-victim' | { pinned: PinnedHold },
): MmeError {
  const { maxLoadedModels, evicts, budgetBytes } = b;
  const scaling = purpose.kind === 'scale';
  const counted = maxLoadedModels > 0 && others.count >= maxLoadedModels;
  const what = counted
    ? `${others.count} models are loaded and max_loaded_models is ${maxLoadedModels}`
    : `${scaling ? 'the new workers need' : 'it needs'} about ${mb(needBytes)} and ${mb(others.bytes + entry.heldBytes)} of the ${mb(budgetBytes)} model memory budget is in use`;
  const subject = scaling
    ? `Model ${entry.name} cannot scale to ${purpose.workers} workers`
    : `Model ${entry.name} does not fit`;
  const advise = (fix: string) =>
    scaling ? `Its workers are unchanged; scale to fewer workers, or ${fix}` : fix[0].toUpperCase() + fix.slice(1);
  const raise = 'raise model_memory_budget_mb / max_loaded_models';
  let said: string;
  if (typeof why === 'object') {
    const { names, heldBytes } = why.pinned;
    const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? `, … (${names.length})` : '');
    said = `, and only evicting pinned models would make room, which the cache never does: ${shown} (${names.length} pinned, ${mb(heldBytes)}). ${advise(`unload one of them (DELETE /models/{name}) or load it again without "pinned": true, or ${raise}`)}`;
  } else if (why === 'fits-never') {
    said = `, and it would not fit with every other model evicted either, so none was. ${advise(raise)}`;
  } else {
    // An autoscale step may evict idle models only: for it, a busy one is one more reason.
    const idleOnly = purpose.kind === 'scale' && purpose.autoscale === true;
    said = `. ${advise(
      evicts
        ? `no other model could be evicted now (each is loading, failed${idleOnly ? ', busy' : ''} or held by an unload or a scale); retry later, or ${raise}`
        : `unload a model (DELETE /models/{name}), or ${raise}`,
    )}`;
  }
  return new MmeError(counted ? 'MME_ERR_MODEL_LIMIT' : 'MME_ERR_INSUFFICIENT_MEMORY', `${subject}: ${what}${said}.`);
}

/** Why the policy's order put the victim at `rank`: an eviction that surprises (the busiest model) can be read from the log. */
function victimWhy(policy: ClassedPolicy, now: number, rank: number, busy: boolean): string {
  const first: string[] = [];
  for (const name of policy.victims(now)) {
    if (first.length === 5) break;
    first.push(name);
  }
  const shown = first.join(', ') + (policy.size > 5 ? `, … (${policy.size})` : '');
  const state = busy ? ', busy: every model before it was busy or changing' : ', idle';
  return `eviction_policy=${policy.name} ranks it ${rank} of ${policy.size}${state}; eviction order ${shown}`;
}
