/**
 * One autoscale round of a serving model: its autoscaler's decision, applied under the name's lock
 * (a busy name is left to the next round). A scale-up or move reserves its memory first, evicting
 * only idle models; with no room it is skipped, logged and counted, and no caller sees it.
 */
import type { WorkerMode } from '../../config/types';
import { isMmeError, type MmeError } from '../../errors';
import type { Purpose } from '../cache/admission';
import type { ModelSlot as WorkerSlot } from '../hosts/model-slot';
import type { Autoscaler, Decision, Direction, ModelLoad, Reason } from './autoscaler';

/** What a round needs of the model (Model, models/model.ts). */
export interface ScaledModel {
  readonly autoscaler: Autoscaler | null;
  readonly load: ModelLoad;
  readonly workers: readonly WorkerSlot[];
  move(to: WorkerMode): Promise<boolean>;
  resize(target: number): Promise<void>;
  refreshMemory(): Promise<number>;
}

/** What a round needs of the model's registration (models/registration.ts). */
export interface ScaledEntry {
  readonly name: string;
  readonly phase: string;
  readonly model: ScaledModel | null;
  unreserve(bytes: number): void;
}

export interface StepDeps<E extends ScaledEntry> {
  /** The name's lock, if it is free now. */
  tryLock(name: string): (() => void) | null;
  current(name: string): E | undefined;
  closing(): boolean;
  /** Reserves what the decision adds (a worker more, or the workers in `to`); returns the bytes reserved. */
  reserve(entry: E, d: Decision, to: WorkerMode | null, purpose: Purpose): Promise<number>;
  autoscaled(name: string, direction: Direction, reason: Reason): void;
  workers(name: string, n: number): void;
  log: (line: string) => void;
}

/** A model held at its limit is skipped at every cooldown (3 s by default): its log line comes at the first skip, then every this many. */
const kSkipLogEvery = 100;

export async function autoscaleStep<E extends ScaledEntry>(entry: E, deps: StepDeps<E>): Promise<void> {
  const { name, model } = entry;
  const scaler = model?.autoscaler;
  if (!model || !scaler || entry.phase !== 'ready' || deps.closing()) return;
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
