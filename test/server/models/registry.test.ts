/**
 * The registry's kept tallies, listing and counts (models/registry.ts) against the same figures
 * computed by a pass over every registration, through random loads, failures, recoveries,
 * reservations, memory measurements and unloads.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Model } from '../../../src/server/models/model';
import { type Phase, Registration } from '../../../src/server/models/registration';
import { ModelRegistry } from '../../../src/server/models/registry';
import { VirtualClock } from '../../helpers/virtual-clock';
import { scanTally } from '../cache/scan-tally';

/** What the registry reads of a model: its name, its memory figure and whether it moves. */
function fakeModel(name: string, memoryMoves: boolean): Model {
  return { name, memoryBytes: 0, memoryMoves } as unknown as Model;
}

describe('model registry', () => {
  it('property: its tallies, counts and pages equal a pass over every registration', () => {
    const name = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    const op = fc.oneof(
      fc.record({ load: name, moves: fc.boolean() }),
      fc.record({ step: name, to: fc.constantFrom<Phase>('ready', 'failed', 'draining', 'stopping', 'gone') }),
      fc.record({ reserve: name, bytes: fc.integer({ min: 0, max: 1000 }) }),
      fc.record({ unreserve: name }),
      fc.record({ measure: name, bytes: fc.integer({ min: 0, max: 1000 }) }),
      fc.record({ page: fc.nat(6), count: fc.nat(6) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const registry = new ModelRegistry();
        const clock = new VirtualClock();
        const reference = scanTally(() => registry.live);
        const latest = new Map<string, Registration>();
        for (const o of ops) {
          if ('load' in o) {
            const old = registry.current(o.load);
            if (old && (old.serving || old.phase === 'loading')) continue;
            const e = new Registration(o.load, `/${o.load}`, false, false, clock);
            registry.claim(e);
            e.built(fakeModel(o.load, o.moves));
            latest.set(o.load, e);
          } else if ('step' in o) {
            const e = latest.get(o.step);
            if (!e) continue;
            try {
              e.to(o.to);
            } catch {
              continue; // a move the transition table does not list
            }
            if (o.to === 'gone') {
              registry.release(e);
            }
          } else if ('reserve' in o) {
            latest.get(o.reserve)?.reserve(o.bytes);
          } else if ('unreserve' in o) {
            latest.get(o.unreserve)?.unreserve();
          } else if ('measure' in o) {
            const e = latest.get(o.measure);
            if (!e?.model) continue;
            e.model.memoryBytes = o.bytes;
            e.memoryChanged();
          } else {
            const serving = [...latest.values()]
              .filter((e) => registry.current(e.name) === e && e.serving)
              .map((e) => e.name)
              .sort();
            assert.deepEqual(
              registry.page(o.page, o.count).map((m) => m.name),
              serving.slice(o.page, o.page + o.count),
            );
          }
          for (const holders of ['all', 'notReady', 'failed'] as const)
            assert.deepEqual(registry.held(holders), reference.held(holders), holders);
          assert.equal(registry.nextSettle() === null, reference.nextSettle() === null, 'something to wait for');
          assert.deepEqual(new Set(registry.moving), new Set(reference.moving));
          const serving = registry.page(0, Infinity);
          assert.equal(registry.servingCount(), serving.length);
          assert.equal(registry.failedCount(), serving.filter((m) => registry.current(m.name)!.failed).length);
          assert.equal(registry.onlyModel(), serving.length === 1 ? serving[0].name : null);
        }
      }),
    );
  });

  it('nextSettle: null with nothing under way; settled when an admitted load leaves loading or a leaving entry is gone', async () => {
    const registry = new ModelRegistry();
    const clock = new VirtualClock();
    const queued = new Registration('q', '/q', true, false, clock);
    registry.claim(queued);
    assert.equal(registry.nextSettle(), null, 'a load not yet admitted is nothing to wait for');
    const a = new Registration('a', '/a', true, false, clock);
    registry.claim(a);
    a.reserve(10);
    const first = registry.nextSettle()!;
    assert.equal(registry.nextSettle(), first, 'one promise for every waiter');
    let settled = false;
    void first.then(() => (settled = true));
    a.built(fakeModel('a', false));
    a.to('ready');
    await first;
    assert.ok(settled);
    assert.equal(registry.nextSettle(), null);
    a.to('draining');
    const second = registry.nextSettle()!;
    assert.notEqual(second, first);
    a.to('stopping');
    a.to('gone');
    registry.release(a);
    await second;
    assert.equal(registry.nextSettle(), null);
  });
});
