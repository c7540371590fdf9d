/**
 * Keeps a heavy model from slowing its neighbours in a shared host: a host runs one session at a
 * time, so a model that runs for tens of ms makes every model beside it wait that long. Every
 * kRoundMs, a model whose share of its host's thread is over `heavyShare` marks the host heavy
 * (placement avoids it) and its neighbours move to a host without one, started there before they
 * leave (as recycling does). The mark stays until the share falls under half, so it does not flap.
 */
import type { Clock, Timer } from '../../util/clock';
import type { SharedHost } from './shared-policy';
import type { ModelSlot } from './model-slot';

const kRoundMs = 2000;
const kMoveCooldownMs = 60_000;
const kMovesPerRound = 16;

export interface HostBalanceDeps {
  hosts(): readonly SharedHost[];
  /** Open, under max_models_per_worker. */
  canTake(host: SharedHost): boolean;
  clock: Clock;
  heavyShare: number;
  log(line: string): void;
}

export class HostBalance {
  /** Each model's run time at the previous round (µs), and when that was. */
  #previous = new Map<ModelSlot, number>();
  #previousAt: number;
  readonly #movedAt = new Map<string, number>();
  #timer: Timer | null = null;

  constructor(private readonly deps: HostBalanceDeps) {
    this.#previousAt = deps.clock.now();
    this.#schedule();
  }

  close(): void {
    this.deps.clock.clearTimeout(this.#timer);
  }

  #schedule(): void {
    this.#timer = this.deps.clock.setTimeout(() => {
      this.#round();
      this.#schedule();
    }, kRoundMs);
    this.#timer.unref();
  }

  #round(): void {
    const { clock, heavyShare } = this.deps;
    const now = clock.now();
    const elapsedMicros = (now - this.#previousAt) * 1000;
    const shares = new Map<ModelSlot, number>();
    const current = new Map<ModelSlot, number>();
    const heaviest = new Map<SharedHost, { model: ModelSlot; share: number }>();
    for (const host of this.deps.hosts()) {
      for (const m of host.slots) {
        current.set(m, m.runMicros);
        const before = this.#previous.get(m);
        if (before === undefined || elapsedMicros <= 0) continue;
        const share = Math.max(0, m.runMicros - before) / elapsedMicros;
        shares.set(m, share);
        if (share > (heaviest.get(host)?.share ?? 0)) heaviest.set(host, { model: m, share });
      }
    }
    this.#previous = current;
    this.#previousAt = now;
    for (const [name, at] of this.#movedAt) if (now - at >= kMoveCooldownMs) this.#movedAt.delete(name);
    for (const host of this.deps.hosts()) {
      // A host being recycled is moving all of its models already.
      if (!host.open) continue;
      const heavy = heaviest.get(host) ?? null;
      const stays = heavy !== null && heavy.model.modelName === host.policy.heavyModel && heavy.share >= heavyShare / 2;
      host.policy.heavyModel = heavy !== null && (heavy.share >= heavyShare || stays) ? heavy.model.modelName : null;
      if (host.policy.heavyModel !== null) this.#moveNeighbours(host, heavy!.model, shares, now);
    }
  }

  #moveNeighbours(host: SharedHost, heavy: ModelSlot, shares: Map<ModelSlot, number>, now: number): void {
    const refuge = this.deps.hosts().some((h) => h !== host && h.policy.heavyModel === null && this.deps.canTake(h));
    if (!refuge) return;
    let moved = 0;
    for (const m of host.slots) {
      if (moved >= kMovesPerRound) return;
      if (m === heavy || !((shares.get(m) ?? 0) > 0) || this.#movedAt.has(m.modelName)) continue;
      this.deps.log(
        `[${host.id}] model ${heavy.modelName} takes ${Math.round((shares.get(heavy) ?? 0) * 100)} % of the host (shared_host_heavy_share ${this.deps.heavyShare}): moving its neighbour ${m.modelName} to a host without a heavy model`,
      );
      this.#movedAt.set(m.modelName, now);
      m.relocate();
      moved++;
    }
  }
}
