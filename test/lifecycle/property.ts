/**
 * What the model-based property tests share, whatever runs below the registry (dedicated workers or
 * fake processes under shared hosts): the registry's commands, the record of their outcomes, and
 * the invariants about requests and registrations.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ModelManager } from '../../src/server/models/model-manager';
import type { Model } from '../../src/server/models/model';
import { statusOf, invokeRequest } from './harness';

export const names = ['m0', 'm1', 'm2'];
export const name = fc.constantFrom(...names);
/** Which live worker or process an event happens to (modulo how many there are). */
export const pick = fc.nat(20);

export type RegistryCommand =
  | { kind: 'load'; name: string }
  | { kind: 'unload'; name: string }
  | { kind: 'invoke'; name: string }
  | { kind: 'scale'; name: string; workers: number };

/** The registry's operations; invoke twice, so requests are common enough to race everything else. */
export const registryCommands: Array<fc.Arbitrary<RegistryCommand>> = [
  fc.record({ kind: fc.constant('load' as const), name }),
  fc.record({ kind: fc.constant('unload' as const), name }),
  fc.record({ kind: fc.constant('invoke' as const), name }),
  fc.record({ kind: fc.constant('invoke' as const), name }),
  fc.record({ kind: fc.constant('scale' as const), name, workers: fc.integer({ min: 0, max: 2 }) }),
];

export interface Outcome {
  kind: string;
  name: string;
  status: number;
  code?: string;
}

/** The outcomes of the operations started, in the order they finished. */
export class Outcomes {
  readonly list: Outcome[] = [];
  readonly pending: Array<Promise<void>> = [];
  invokes = 0;

  constructor(
    private readonly manager: ModelManager,
    private readonly store: string,
  ) {}

  track(kind: string, n: string, p: Promise<unknown>): void {
    this.pending.push(statusOf(p).then((r) => void this.list.push({ kind, name: n, status: r.status, code: r.code })));
  }

  /** Starts a registry command. */
  start(c: RegistryCommand): void {
    switch (c.kind) {
      case 'load':
        this.track('load', c.name, this.manager.lifecycle.load({ modelName: c.name, url: `${this.store}/${c.name}` }));
        break;
      case 'unload':
        this.track('unload', c.name, this.manager.lifecycle.unload(c.name));
        break;
      case 'invoke':
        this.invokes++;
        this.track('invoke', c.name, this.manager.onDemand.invoke(c.name, invokeRequest()));
        break;
      default:
        this.track('scale', c.name, this.manager.lifecycle.scale(c.name, c.workers, c.workers, false));
    }
  }
}

/**
 * Runs `commands` one per tick, shutdown before command `shutdownAt`; registry commands go to the
 * manager, and `event` plays the others (what happens below the registry) and says whether it did.
 */
export async function runCommands<C extends { kind: string }>(
  manager: ModelManager,
  store: string,
  commands: readonly C[],
  shutdownAt: number | null,
  event: (c: C, outcomes: Outcomes) => Promise<boolean> | boolean,
): Promise<Outcomes> {
  const outcomes = new Outcomes(manager, store);
  for (const [i, c] of commands.entries()) {
    if (i === shutdownAt) outcomes.pending.push(manager.close(2000).then(() => undefined));
    if (!(await event(c, outcomes))) outcomes.start(c as unknown as RegistryCommand);
    await new Promise((r) => setImmediate(r));
  }
  return outcomes;
}

/**
 * No registration between phases. On virtual time an invoke may give up waiting for a load
 * (load_wait_timeout) that goes on: the test lets that load settle too before it checks.
 */
export function registrySettled(manager: ModelManager): boolean {
  return names.every((n) => ['ready', 'failed', undefined].includes(manager.registry.current(n)?.phase));
}

/**
 * Every request answered exactly once; no internal error (each failure has a reason the table
 * names); no illegal transition logged; no registration stuck between phases. Returns the models
 * registered, whose workers the caller checks against what runs.
 */
export function checkRequestsAndRegistry(manager: ModelManager, logs: string[], outcomes: Outcomes): Model[] {
  assert.equal(outcomes.list.filter((o) => o.kind === 'invoke').length, outcomes.invokes);
  for (const o of outcomes.list) assert.notEqual(o.code, 'MME_ERR_INTERNAL', JSON.stringify(o));
  assert.ok(!logs.some((l) => /illegal .*transition|load failed: .*Error/.test(l)), logs.join('\n'));
  const registered: Model[] = [];
  for (const n of names) {
    const e = manager.registry.current(n);
    if (!e) continue;
    assert.ok(e.phase === 'ready' || e.phase === 'failed', `${n} is stuck in ${e.phase}`);
    registered.push(manager.registry.get(n));
  }
  return registered;
}

/**
 * No stale registration takes over a reused name: a name is registered exactly when the last
 * load or unload of it to finish was a successful load (when nothing is evicted).
 */
export function checkNamesNeverTakenOver(manager: ModelManager, outcomes: Outcomes): void {
  for (const n of names) {
    const last = outcomes.list
      .filter(
        (o) => o.name === n && (o.kind === 'load' || o.kind === 'unload') && (o.status === 200 || o.status === 408),
      )
      .at(-1);
    assert.equal(
      manager.registry.registered(n),
      last?.kind === 'load' && last.status === 200,
      `${n}: last ${JSON.stringify(last)}`,
    );
  }
}
