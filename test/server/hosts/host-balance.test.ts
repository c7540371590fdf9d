/**
 * Heavy-model balance in shared hosts (hosts/host-balance.ts): every 2 s round, a model over
 * shared_host_heavy_share of its host's thread marks the host heavy and its neighbours that ran in
 * the round move away; the mark stays until the share falls under half the threshold; a model
 * moves at most once a minute. The balance reads only each host's slots (the models in it), their
 * cumulative run time and the heavy mark (in its policy), so the hosts here are plain objects whose
 * run times the test sets, and rounds pass on a virtual clock.
 */
import assert from 'node:assert/strict';
import { HostBalance } from '../../../src/server/hosts/host-balance';
import { VirtualClock } from '../../helpers/virtual-clock';

type Deps = ConstructorParameters<typeof HostBalance>[0];
type Host = ReturnType<Deps['hosts']>[number];

const kRoundMs = 2000;

interface FakeModel {
  modelName: string;
  /** Cumulative run time (µs), as the host reports it. */
  runMicros: number;
  moves: number;
  relocate(): void;
}

interface FakeHost {
  id: string;
  open: boolean;
  /** Its slots, as HostProcess.slots: each a model's place in the host. */
  slots: FakeModel[];
  /** Its policy's heavy mark, as SharedPolicy.heavyModel. */
  policy: { heavyModel: string | null };
}

function model(modelName: string): FakeModel {
  return {
    modelName,
    runMicros: 0,
    moves: 0,
    relocate() {
      this.moves++;
    },
  };
}

function host(id: string, ...models: FakeModel[]): FakeHost {
  return {
    id,
    open: true,
    slots: models,
    policy: { heavyModel: null },
  };
}

function balance(
  hosts: FakeHost[],
  opts: { canTake?: (h: FakeHost) => boolean } = {},
): { clock: VirtualClock; logs: string[]; balance: HostBalance } {
  const clock = new VirtualClock();
  const logs: string[] = [];
  const b = new HostBalance({
    hosts: () => hosts as unknown as readonly Host[],
    canTake: (h) => opts.canTake?.(h as unknown as FakeHost) ?? true,
    clock,
    heavyShare: 0.5,
    log: (l) => logs.push(l),
  });
  return { clock, logs, balance: b };
}

/** One round in which each model ran `shares[name]` of the round's 2 s. */
function round(clock: VirtualClock, models: FakeModel[], shares: Record<string, number>): void {
  for (const m of models) m.runMicros += Math.round((shares[m.modelName] ?? 0) * kRoundMs * 1000);
  clock.advance(kRoundMs);
}

describe('host balance (heavy models in shared hosts, virtual clock)', () => {
  it('marks a host heavy at exactly the threshold share, not below it, and moves only the neighbours that ran', () => {
    const [x, y, idle] = [model('x'), model('y'), model('idle')];
    const h1 = host('host-1', x, y, idle);
    const h2 = host('host-2');
    const { clock, logs } = balance([h1, h2]);
    round(clock, [x, y], { x: 0.9, y: 0.1 });
    assert.equal(h1.policy.heavyModel, null, 'the first round only takes the baseline');
    round(clock, [x, y], { x: 0.49, y: 0.1 });
    assert.equal(h1.policy.heavyModel, null);
    assert.deepEqual([x.moves, y.moves, idle.moves], [0, 0, 0]);
    round(clock, [x, y], { x: 0.5, y: 0.1 });
    assert.equal(h1.policy.heavyModel, 'x');
    assert.equal(h2.policy.heavyModel, null);
    assert.deepEqual([x.moves, y.moves, idle.moves], [0, 1, 0]);
    assert.deepEqual(logs, [
      '[host-1] model x takes 50 % of the host (shared_host_heavy_share 0.5): moving its neighbour y to a host without a heavy model',
    ]);
  });

  it('keeps the mark while the share stays at half the threshold or more, and clears it below', () => {
    const x = model('x');
    const h1 = host('host-1', x);
    const { clock } = balance([h1, host('host-2')]);
    round(clock, [x], {});
    round(clock, [x], { x: 0.6 });
    assert.equal(h1.policy.heavyModel, 'x');
    round(clock, [x], { x: 0.25 });
    assert.equal(h1.policy.heavyModel, 'x', 'at half the threshold the mark stays');
    round(clock, [x], { x: 0.24 });
    assert.equal(h1.policy.heavyModel, null);
  });

  it('moves a neighbour at most once a minute, however long the model beside it stays heavy', () => {
    const [x, y] = [model('x'), model('y')];
    const h1 = host('host-1', x, y);
    const { clock } = balance([h1, host('host-2')]);
    round(clock, [x, y], {});
    round(clock, [x, y], { x: 0.8, y: 0.1 }); // t = 4 s: y moves
    assert.equal(y.moves, 1);
    // y is still reported in host-1 (the move is under way) and keeps running beside x.
    while (clock.now() < 62_000) round(clock, [x, y], { x: 0.8, y: 0.1 });
    assert.equal(y.moves, 1, 'not again before 60 s have passed');
    round(clock, [x, y], { x: 0.8, y: 0.1 }); // t = 64 s
    assert.equal(y.moves, 2);
  });

  it('marks the host but moves nobody when no other host can take a model, and skips a host being recycled', () => {
    const [x, y] = [model('x'), model('y')];
    const h1 = host('host-1', x, y);
    const full = host('host-2');
    const { clock } = balance([h1, full], { canTake: (h) => h !== full });
    round(clock, [x, y], {});
    round(clock, [x, y], { x: 0.8, y: 0.1 });
    assert.equal(h1.policy.heavyModel, 'x');
    assert.equal(y.moves, 0);

    const [p, q] = [model('p'), model('q')];
    const recycled = host('host-3', p, q);
    recycled.open = false;
    const other = balance([recycled, host('host-4')]);
    round(other.clock, [p, q], {});
    round(other.clock, [p, q], { p: 0.9, q: 0.1 });
    assert.equal(recycled.policy.heavyModel, null);
    assert.equal(q.moves, 0);
  });

  it('runs no round after close()', () => {
    const { clock, balance: b } = balance([host('host-1')]);
    assert.equal(clock.pending, 1);
    b.close();
    assert.equal(clock.pending, 0);
  });
});
