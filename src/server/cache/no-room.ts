/**
 * What admission (admission.ts) says: the 507 of a reservation that cannot fit, with what to change,
 * and why its policy's order chose a victim, for the eviction's log line.
 */
import { MmeError } from '../../errors';
import { mb } from '../../util/mb';
import type { EvictionPolicy } from './eviction-policy';

/** A reservation's figures: who asks, for how much, and what the budget holds without it. */
export interface Ask {
  readonly name: string;
  readonly needBytes: number;
  /** Memory in use, its own included (bytes). */
  readonly usedBytes: number;
  /** Models counted against max_loaded_models, itself excluded. */
  readonly count: number;
}

/** The budget admission keeps. */
export interface Budget {
  readonly budgetBytes: number;
  readonly maxLoadedModels: number;
  /** The self-managed cache may evict. */
  readonly evicts: boolean;
}

/**
 * What a reservation is for, as its 507 says. `autoscale`: a worker the server chose to add, which
 * may evict only idle models, never one busier than the model it is for.
 */
export type Purpose = { kind: 'load' } | { kind: 'scale'; workers: number; autoscale?: boolean };

/** The pinned models in the way of a reservation: their names and what they hold. */
export interface PinnedHold {
  readonly names: readonly string[];
  readonly heldBytes: number;
}

/**
 * The 507: what is full, and what to change. `why`: `fits-never` when it would not fit with every
 * evictable model gone (so none was), `pinned` when it would fit only by evicting pinned models,
 * `no-victim` when nothing could be evicted now.
 */
export function noRoom(
  b: Budget,
  ask: Ask,
  purpose: Purpose,
  why: 'fits-never' | 'no-victim' | { pinned: PinnedHold },
): MmeError {
  const { maxLoadedModels, evicts, budgetBytes } = b;
  const scaling = purpose.kind === 'scale';
  const what =
    maxLoadedModels > 0 && ask.count >= maxLoadedModels
      ? `${ask.count} models are loaded and max_loaded_models is ${maxLoadedModels}`
      : `${scaling ? 'the new workers need' : 'it needs'} about ${mb(ask.needBytes)} and ${mb(ask.usedBytes)} of the ${mb(budgetBytes)} model memory budget is in use`;
  const subject = scaling
    ? `Model ${ask.name} cannot scale to ${purpose.workers} workers`
    : `Model ${ask.name} does not fit`;
  const advise = (fix: string) =>
    scaling ? `Its workers are unchanged; scale to fewer workers, or ${fix}` : fix[0].toUpperCase() + fix.slice(1);
  if (typeof why === 'object') {
    const { names, heldBytes } = why.pinned;
    const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? `, … (${names.length})` : '');
    return new MmeError(
      'MME_ERR_INSUFFICIENT_MEMORY',
      `${subject}: ${what}, and only evicting pinned models would make room, which the cache never does: ${shown} (${names.length} pinned, ${mb(heldBytes)}). ${advise('unload one of them (DELETE /models/{name}) or load it again without "pinned": true, or raise model_memory_budget_mb / max_loaded_models')}.`,
    );
  }
  if (why === 'fits-never') {
    return new MmeError(
      'MME_ERR_INSUFFICIENT_MEMORY',
      `${subject}: ${what}, and it would not fit with every other model evicted either, so none was. ${scaling ? 'Its workers are unchanged; scale to fewer workers, or raise' : 'Raise'} model_memory_budget_mb / max_loaded_models.`,
    );
  }
  // An autoscale step may evict idle models only: for it, a busy one is one more reason.
  const idleOnly = purpose.kind === 'scale' && purpose.autoscale === true;
  const fix = evicts
    ? `no other model could be evicted now (each is loading, failed${idleOnly ? ', busy' : ''} or held by an unload or a scale); retry later, or raise model_memory_budget_mb / max_loaded_models`
    : 'unload a model (DELETE /models/{name}), or raise model_memory_budget_mb / max_loaded_models';
  return new MmeError('MME_ERR_INSUFFICIENT_MEMORY', `${subject}: ${what}. ${advise(fix)}.`);
}

/** Why the policy's order put the victim at `rank`: an eviction that surprises (the busiest model) can be read from the log. */
export function victimWhy(policy: EvictionPolicy, now: number, rank: number, busy: boolean): string {
  const first: string[] = [];
  for (const name of policy.victims(now)) {
    if (first.length === 5) break;
    first.push(name);
  }
  const shown = first.join(', ') + (policy.size > 5 ? `, … (${policy.size})` : '');
  const state = busy ? ', busy: every model before it was busy or changing' : ', idle';
  return `eviction_policy=${policy.name} ranks it ${rank} of ${policy.size}${state}; eviction order ${shown}`;
}
