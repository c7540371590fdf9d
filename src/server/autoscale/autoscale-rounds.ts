/**
 * The autoscale rounds (autoscale=on): every kRoundMs, each serving model with an autoscaler gets
 * one step: its autoscaler's decision, applied under the name's lock (a busy name is left to the
 * next round). A scale-up or move reserves its memory first, evicting only idle models; with no
 * room it is skipped, logged and counted, and no caller sees it. A timer on the server's clock,
 * re-armed after each round, so a virtual clock drives it in tests and a slow round never overlaps
 * the next. Each round tells every autoscaler the cores the server's own process used since the last.
 */
import type { WorkerMode } from '../../config/types';
import { isMmeError, type MmeError } from '../../errors';
import { realClock, type Clock, type Timer } from '../../util/clock';
import type { Purpose } from '../cache/admission';
import type { ModelSlot as WorkerSlot } from '../hosts/model-slot';
import type { Autoscaler, Decision, Direction, ModelLoad, Reason } from './autoscaler';

/** How often a model's queue is judged: a burst gets its first extra worker within about this. */
export const kRoundMs = 500;

/** A model held at its limit is skipped at every cooldown (3 s by default): its log line comes at the first skip, then every this many. */
const kSkipLogEvery = 100;

/** What a step needs of the model (Model, models/model.ts). */
export interface ScaledModel {
  readonly autoscaler: Autoscaler | null;
  readonly load: ModelLoad;
  readonly workers: readonly WorkerSlot[];
  move(to: WorkerMode): Promise<boolean>;
  resize(target: number): Promise<void>;
  refreshMemory(): Promise<number>;
}

/** What a step needs of the model's registration (models/registration.ts). */
export interface ScaledEntry {
  readonly name: string;
  readonly phase: string;
  readonly model: ScaledModel | null;
  unreserve(bytes: number): void;
}

/** What a step needs of the operations (LifecycleOperations.autoscaling). */
export interface StepDeps<E extends ScaledEntry> {
  /** The name's lock, if it is free now. */
  tryLock(name: string): (() => void) | null;
  current(name: string): E | undefined;
  /** Reserves what the decision adds (a worker more, or the workers in `to`); returns the bytes reserved. */
  reserve(entry: E, d: Decision, to: WorkerMode | null, purpose: Purpose): Promise<number>;
  autoscaled(name: string, direction: Direction, reason: Reason): void;
  workers(name: string, n: number): void;
  log: (line: string) => void;
}

export interface RoundsDeps<E extends ScaledEntry> extends StepDeps<E> {
  clock: Clock;
  entries(): Iterable<E>;
  /** This process's CPU time so far, µs. Default: process.cpuUsage() on the real clock; none on another (CPU time against virtual time means nothing). */
  cpuMicros?: () => number;
}

function processCpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

export class AutoscaleRounds<E extends ScaledEntry> {
  #timer: Timer | null = null;
  /** Stopped before shutdown begins: no step starts once it is. */
  #stopped = false;
  /** The round under way: it awaits memory measurements (real I/O), whatever clock drives the timer. */
  #running: Promise<void> = Promise.resolve();
  readonly #cpuMicros: () => number;
  #cpuAt: { at: number; micros: number };

  constructor(private readonly deps: RoundsDeps<E>) {
    this.#cpuMicros = deps.cpuMicros ?? (deps.clock === realClock ? processCpuMicros : () => 0);
    this.#cpuAt = { at: deps.clock.now(), micros: this.#cpuMicros() };
  }

  start(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = this.deps.clock.setTimeout(() => void (this.#running = this.#run()), kRoundMs);
    this.#timer.unref();
  }

  async #run(): Promise<void> {
    this.#timer = null;
    const now = { at: this.deps.clock.now(), micros: this.#cpuMicros() };
    const cores = (now.micros - this.#cpuAt.micros) / Math.max(1, (now.at - this.#cpuAt.at) * 1000);
    this.#cpuAt = now;
    const entries = [...this.deps.entries()].filter((e) => e.model?.autoscaler);
    for (const e of entries) e.model!.autoscaler!.serverCores = cores;
    await Promise.all(
      entries.map((e) =>
        this.#step(e).catch((err: Error) => this.deps.log(`[${e.name}] autoscale round failed: ${err.message}`)),
      ),
    );
    this.start();
  }

  /** Resolves once the round under way (if any) has finished and the next is armed. */
  settled(): Promise<void> {
    return this.#running;
  }

  stop(): void {
    this.#stopped = true;
    this.deps.clock.clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #step(entry: E): Promise<void> {
    const { deps } = this;
    const { name, model } = entry;
    const scaler = model?.autoscaler;
    if (!model || !scaler || entry.phase !== 'ready' || this.#stopped) return;
    const d = scaler.decide(model.load);
    if (!d) return;
    const { log } = deps;
    /** A skipped step is counted (AutoscaleEvents); its line comes at the first of a run of skips, and every kSkipLogEvery-th after it. */
    const skip = (reason: Reason, what: string) => {
      deps.autoscaled(name, d.direction, reason);
      const inARow = scaler.skipsInARow;
      if (inARow === 1)
        log(`[${name}] autoscale: ${what} (while it stays skipped, one line every ${kSkipLogEvery} skips)`);
      else if (inARow % kSkipLogEvery === 0) log(`[${name}] autoscale: ${what} (${inARow} skips in a row)`);
    };
    if (d.skipped) return skip(d.skipped, `not scaling up to ${d.target} worker(s), ${d.reason}: ${d.why}`);
    const unlock = deps.tryLock(name);
    if (!unlock) return scaler.withdrawn();
    const to = d.to ?? null;
    const what = to
      ? `${d.reason === 'promote' ? 'promoted to processes of its own' : 'demoted into a shared host'} (${d.target} worker(s))`
      : `${d.direction} to ${d.target} worker(s)`;
    try {
      if (deps.current(name) !== entry || entry.phase !== 'ready') return scaler.withdrawn();
      let reserved = 0;
      if (d.direction === 'up' || to) {
        try {
          reserved = await deps.reserve(entry, d, to, { kind: 'scale', workers: d.target, autoscale: true });
        } catch (err) {
          if (!isMmeError(err) || err.code !== 'MME_ERR_INSUFFICIENT_MEMORY') {
            scaler.withdrawn();
            throw err;
          }
          scaler.skippedForMemory(d, err.message);
          const skipped = to ? `moving: it would be ${what}` : `scaling up to ${d.target} worker(s)`;
          return skip('no_memory', `not ${skipped} (${d.why}): ${err.message}`);
        }
      }
      scaler.applied(d);
      deps.autoscaled(name, d.direction, d.reason);
      log(`[${name}] autoscale: ${what}, ${d.reason}: ${d.why}`);
      const changing = (to ? model.move(to) : model.resize(d.target).then(() => true)).finally(async () => {
        await model.refreshMemory();
        entry.unreserve(reserved);
      });
      deps.workers(name, d.target);
      changing.then(
        (moved) => {
          if (!to) return;
          const where = model.workers.map((w) => w.sharedHostId ?? `pid ${w.pid}`).join(', ');
          log(
            `[${name}] autoscale: ${d.reason} ${moved ? 'done' : 'not done: nowhere to go'}; its workers are in ${where}`,
          );
        },
        (err: MmeError) => log(`[${name}] autoscale: ${what} failed: ${err.message}`),
      );
    } finally {
      unlock();
    }
  }
}
