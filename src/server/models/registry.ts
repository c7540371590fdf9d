/**
 * Which registration holds each name, and every registration not yet gone; only the lifecycle
 * operations add or remove entries. Every query costs the same with 100 000 models as with ten:
 * registrations report each phase and memory change, and the registry keeps the serving names in
 * order (a page of GET /models is O(log n + page)) and the tallies memory admission reads.
 */
import { deferred, type Deferred } from '../../util/deferred';
import { OrderedSet } from '../../util/ordered-set';
import type { Holders, Tally } from '../cache/admission';
import type { Model } from './model';
import type { Phase, Registration, RegistrationListener } from './registration';
import { modelNotFound } from './model-names';

const kPhases: readonly Phase[] = ['loading', 'ready', 'failed', 'draining', 'stopping', 'gone'];

export class ModelRegistry implements Tally<Registration>, RegistrationListener {
  readonly #entries = new Map<string, Registration>();
  /** Every registration not yet gone, current or leaving (what holds memory), with what it held when it last reported. */
  readonly #live = new Map<Registration, number>();
  /** Names whose current registration serves (ready or failed), in order. */
  readonly #serving = new OrderedSet();
  /** Live registrations and what they hold, by phase, as last reported. */
  readonly #count = new Map<Phase, number>(kPhases.map((p) => [p, 0]));
  readonly #held = new Map<Phase, number>(kPhases.map((p) => [p, 0]));
  #heldTotal = 0;
  /** Serving registrations whose memory figure moves (dedicated workers). */
  readonly #moving = new Set<Registration>();
  /** Live registrations loading past their admission: with the serving ones, what max_loaded_models counts. */
  #admittedLoads = 0;
  /** What admission waits on for room: settled at the next load that settles or entry that is gone. */
  #settle: Deferred<void> | null = null;

  current(name: string): Registration | undefined {
    return this.#entries.get(name);
  }

  /** Iterable more than once, as the set it was (each pass sees the registrations live then). */
  get live(): Iterable<Registration> {
    return { [Symbol.iterator]: () => this.#live.keys() };
  }

  /** `entry` takes its name over (a leaving registration of the name stays live until it is gone). */
  claim(entry: Registration): void {
    this.#entries.set(entry.name, entry);
    this.#live.set(entry, entry.heldBytes);
    this.#tallyAdd(entry.phase, 1, entry.heldBytes);
    entry.listener = this;
    this.#placeServing(entry);
  }

  /** Frees `entry`'s name if it still holds it (a name loaded again belongs to the new entry). */
  release(entry: Registration): void {
    if (this.#entries.get(entry.name) !== entry) return;
    this.#entries.delete(entry.name);
    this.#serving.delete(entry.name);
  }

  /** A registration gone is no longer live: it holds nothing. */
  phaseChanged(entry: Registration, from: Phase, to: Phase): void {
    const held = this.#live.get(entry);
    if (held === undefined) return;
    this.#tallyAdd(from, -1, -held);
    if (to === 'gone') this.#live.delete(entry);
    else this.#tallyAdd(to, 1, held);
    if (from === 'loading' && entry.loadAdmitted) this.#admittedLoads--;
    if (from === 'loading' || to === 'gone') this.#settled();
    if (entry.serving && entry.model?.memoryMoves) this.#moving.add(entry);
    else this.#moving.delete(entry);
    if (this.#entries.get(entry.name) === entry) this.#placeServing(entry);
  }

  heldChanged(entry: Registration, admitted = false): void {
    const before = this.#live.get(entry);
    if (before === undefined) return;
    const now = entry.heldBytes;
    this.#live.set(entry, now);
    this.#tallyAdd(entry.phase, 0, now - before);
    if (admitted && entry.phase === 'loading') this.#admittedLoads++;
  }

  #placeServing(entry: Registration): void {
    if (entry.serving && entry.model) this.#serving.add(entry.name);
    else this.#serving.delete(entry.name);
  }

  #tallyAdd(phase: Phase, n: number, bytes: number): void {
    this.#count.set(phase, this.#count.get(phase)! + n);
    this.#held.set(phase, this.#held.get(phase)! + bytes);
    this.#heldTotal += bytes;
  }

  has(entry: Registration): boolean {
    return this.#live.has(entry);
  }

  held(holders: Holders): { bytes: number; count: number } {
    if (holders === 'failed') return { bytes: this.#held.get('failed')!, count: this.#count.get('failed')! };
    const bytes = this.#heldTotal - (holders === 'notReady' ? this.#held.get('ready')! : 0);
    const ready = holders === 'all' ? this.#count.get('ready')! : 0;
    return { bytes, count: this.#admittedLoads + this.#count.get('failed')! + ready };
  }

  nextSettle(): Promise<void> | null {
    const leaving = this.#count.get('draining')! + this.#count.get('stopping')!;
    if (this.#admittedLoads + leaving === 0) return null;
    this.#settle ??= deferred<void>();
    return this.#settle.promise;
  }

  #settled(): void {
    this.#settle?.resolve();
    this.#settle = null;
  }

  get moving(): Iterable<Registration> {
    return this.#moving;
  }

  /** The serving model, or 404. */
  get(name: string): Model {
    const e = this.#entries.get(name);
    if (!e?.model || !e.serving) throw modelNotFound(name);
    return e.model;
  }

  /** Whether `name` is registered: loaded, or loading (a POST /models in progress, or one answered 202). */
  registered(name: string): boolean {
    const e = this.#entries.get(name);
    return e !== undefined && (e.serving || e.phase === 'loading');
  }

  servingCount(): number {
    return this.#serving.size;
  }

  /** How many of them are failed (a failed registration always holds its name): /ping's Partial Healthy. */
  failedCount(): number {
    return this.#count.get('failed')!;
  }

  /** The name of the one serving model, or null when there are none or several (/invocations asks per request). */
  onlyModel(): string | null {
    return this.#serving.size === 1 ? this.#serving.slice(0, 1)[0] : null;
  }

  page(start: number, count: number): Model[] {
    return this.#serving.slice(start, count).map((name) => this.#entries.get(name)!.model!);
  }
}
