/** What admission says: the 507 of a reservation that cannot fit (memory, or max_loaded_models), and why its policy chose a victim. */
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

export interface Budget {
  readonly budgetBytes: number;
  readonly maxLoadedModels: number;
  /** The self-managed cache may evict to make room. */
  readonly evicts: boolean;
}

/**
 * What a reservation is for, as its 507 says. `autoscale`: a worker the server chose to add, which
 * may evict only idle models, never one busier than the model it is for.
 */
export type Purpose = { kind: 'load' } | { kind: 'scale'; workers: number; autoscale?: boolean };

/** The pinned models in the way of a reservation. */
export interface PinnedHold {
  readonly names: readonly string[];
  readonly heldBytes: number;
}

/**
 * The 507: what is full, and what to change. `fits-never`: it would not fit with every evictable
 * model gone (so none was); `pinned`: only evicting pinned models would make room; `no-victim`:
 * nothing could be evicted now.
 */
export function noRoom(
  b: Budget,
  ask: Ask,
  purpose: Purpose,
  why: 'fits-never' | 'no-victim' | { pinned: PinnedHold },
): MmeError {
  const { maxLoadedModels, evicts, budgetBytes } = b;
  const scaling = purpose.kind === 'scale';
  const counted = maxLoadedModels > 0 && ask.count >= maxLoadedModels;
  const what = counted
    ? `${ask.count} models are loaded and max_loaded_models is ${maxLoadedModels}`
    : `${scaling ? 'the new workers need' : 'it needs'} about ${mb(ask.needBytes)} and ${mb(ask.usedBytes)} of the ${mb(budgetBytes)} model memory budget is in use`;
  const subject = scaling
    ? `Model ${ask.name} cannot scale to ${purpose.workers} workers`
    : `Model ${ask.name} does not fit`;
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
