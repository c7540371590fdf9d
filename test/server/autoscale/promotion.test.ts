/**
 * Autoscale's promotion of a heavy shared model to processes of its own, and its demotion back
 * into a shared host once it cools (workers/autoscaler.ts, applied by LifecycleOperations.autoscale
 * through Model.move): the policy alone on a virtual clock, then the handover on fake processes,
 * where the test decides when each successor loads and when each batch is answered, so requests
 * are in the old worker's hands, and in the queue, while the model moves. Every request is
 * answered once, by one process.
 */
import assert from 'node:assert/strict';
import { kRoundMs } from '../../../src/server/autoscale/autoscale-rounds';
import { Autoscaler, type Decision, type ModelLoad } from '../../../src/server/autoscale/autoscaler';
import { waitFor } from '../../../harness/process-probes';
import {
  answerUntilSettled,
  processHarness,
  statusOf,
  invokeRequest,
  type ProcessHarness,
} from '../../lifecycle/harness';
import type { FakeProcess } from '../../lifecycle/fake-process';
import { VirtualClock } from '../../helpers/virtual-clock';
import { kAutoscaleSettings as kSettings } from '../../helpers/autoscale-settings';
import { settle } from '../../helpers/settle';

const kProperties = [
  'worker_mode=shared',
  'shared_workers=1',
  'max_models_per_worker=2',
  'shared_host_heavy_share=0.5',
  'autoscale=on',
  'autoscale_idle_seconds=5',
  'autoscale_cooldown_seconds=3',
  // The worker counts here are the test's, whatever this machine's cores.
  'autoscale_cores=16',
].join('\n');
/** A round's worth of session runs at 80 % of a thread: over the 0.5 threshold. */
const kHotMicros = 0.8 * kRoundMs * 1000;

describe('autoscale promotion of a shared model', () => {
  describe('the policy (virtual clock)', () => {
    /** A round of a shared model (1 worker, min 1, max 1) whose runs took `share` of a thread since the last. */
    function rounds(s: Autoscaler, clock: VirtualClock, shares: number[], at: Partial<ModelLoad> = {}) {
      const decisions: Array<Decision | null> = [];
      for (const share of shares) {
        clock.advance(kRoundMs);
        ranMicros += share * kRoundMs * 1000;
        decisions.push(
          s.decide({
            workers: 1,
            min: 1,
            max: 1,
            queued: 0,
            mode: 'shared',
            home: 'shared',
            ranMicros,
            completed: 0,
            moving: false,
            ...at,
          }),
        );
      }
      return decisions;
    }
    let ranMicros = 0;
    beforeEach(() => (ranMicros = 0));

    it('promotes a model over shared_host_heavy_share at two rounds in a row, not one', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock, 0.5, 'shared');
      // The share is taken over the last second (two rounds): one hot round among cool ones stays under it.
      assert.deepEqual(rounds(s, clock, [0, 0.9, 0.1, 0.1, 0.9, 0.1]), [null, null, null, null, null, null]);
      const [warming, first, second] = rounds(s, clock, [0.9, 0.9, 0.9]);
      assert.equal(warming, null);
      assert.equal(first, null, 'one round over the threshold is not enough');
      assert.deepEqual([second?.direction, second?.reason, second?.target], ['up', 'promote', 1]);
      assert.match(
        second!.why,
        /its runs took \d+ % of a thread over 1 s, over shared_host_heavy_share=0.5 at 2 rounds/,
      );
      assert.equal(s.status.placement, 'shared');
    });

    it('never promotes with shared_host_heavy_share=0, nor scales a model inside a shared host', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock, 0, 'shared');
      for (let i = 0; i < 100; i++) s.waited(1000);
      assert.deepEqual(
        rounds(s, clock, [1, 1, 1, 1], { queued: 100, max: 4 }).filter((d) => d !== null),
        [],
      );
    });

    it('demotes once at min_worker and under half the threshold for the idle period; a worker above min_worker goes first', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock, 0.5, 'shared');
      const promote = rounds(s, clock, [0.9, 0.9, 0.9])[2]!;
      s.applied(promote);
      const dedicated = { mode: 'dedicated', workers: 2, max: 2 } as const;
      // Cool from here, with a second worker autoscale added: the idle scale-down comes first.
      const down = rounds(s, clock, Array(12).fill(0), dedicated).find((d) => d !== null);
      assert.deepEqual([down?.direction, down?.reason], ['down', 'idle']);
      s.applied(down!);
      const after = rounds(s, clock, Array(30).fill(0), { mode: 'dedicated' });
      const i = after.findIndex((d) => d !== null);
      assert.deepEqual([after[i]?.direction, after[i]?.reason, after[i]?.target], ['down', 'demote', 1]);
      assert.ok((i + 1) * kRoundMs >= kSettings.idleMs, `demoted ${(i + 1) * kRoundMs} ms after the scale-down`);
      assert.match(after[i]!.why, /under half of shared_host_heavy_share=0.5 for \d+ s .*min_worker=1/);
    });

    it('does not flap: a share between half the threshold and the threshold moves nothing in ten minutes, either way', () => {
      for (const mode of ['shared', 'dedicated'] as const) {
        const clock = new VirtualClock();
        const s = new Autoscaler(kSettings, clock, 0.5, 'shared');
        const decisions = rounds(s, clock, Array(1200).fill(0.4), { mode }).filter((d) => d !== null);
        assert.deepEqual(decisions, [], mode);
      }
    });
  });

  describe('the handover on fake processes (virtual clock)', () => {
    interface Promoted extends ProcessHarness {
      events: string[];
      /** How often each request id was answered, over every process. */
      answered: Map<number, number>;
    }

    /** Loads `name` into the shared host, answering its Load by hand. */
    async function load(h: ProcessHarness, name: string): Promise<void> {
      const loading = h.manager.lifecycle.load({ modelName: name, url: h.model(name) });
      await waitFor(() => h.processes.live().some((p) => p.loads.length > 0), `${name}'s load`);
      for (const p of h.processes.live()) p.load();
      await loading;
    }

    async function setUp(): Promise<Promoted> {
      const h = processHarness(kProperties, { autoLoad: false });
      const events: string[] = [];
      h.manager.events.sink = {
        autoscaleEvent: (model, direction, reason) => events.push(`${model} ${direction} ${reason}`),
      };
      await load(h, 'a');
      await load(h, 'b');
      return { ...h, events, answered: new Map() };
    }

    /** Answers every batch `p` holds, each run taking `micros`, and counts each request answered. */
    function answerAndCount(h: Promoted, p: FakeProcess, micros = 1): void {
      while (p.batches.length > 0) {
        for (const r of p.batches[0].requests) h.answered.set(r.id, (h.answered.get(r.id) ?? 0) + 1);
        p.answer(micros);
      }
    }

    /** Round by round (at most a minute of virtual time), `each` before the round, until `cond`. */
    async function untilRound(
      h: Promoted,
      cond: () => boolean,
      what: string,
      each: () => Promise<void> | void = () => {},
    ) {
      const t0 = h.clock.now();
      while (!cond()) {
        assert.ok(h.clock.now() - t0 < 60_000, `${what}: not within a minute of virtual time`);
        await each();
        h.clock.advance(kRoundMs);
        await settle();
        // The round measures memory (real I/O); the next is armed only once it is done: wait for it.
        await h.manager.autoscale?.settled();
        await settle();
      }
    }

    const send = (h: Promoted, n: number) =>
      Array.from({ length: n }, () => statusOf(h.manager.onDemand.invoke('a', invokeRequest())));

    it('promotes a hot model to a process of its own and demotes it once cool (not while the host is full); requests in flight while it moves are answered once each', async () => {
      const h = await setUp();
      const [host] = h.processes.live();
      const model = h.manager.registry.get('a');
      const all: Array<Promise<{ status: number }>> = [];
      // `a` runs hot: each round, a request whose run takes 80 % of the round.
      await untilRound(
        h,
        () => h.events.length > 0,
        'the promotion',
        async () => {
          all.push(...send(h, 1));
          await settle();
          answerAndCount(h, host, kHotMicros);
        },
      );
      assert.deepEqual(h.events, ['a up promote'], h.logs.join('\n'));
      assert.equal(model.mode, 'dedicated');
      assert.ok(
        h.logs.some((l) =>
          /^\[a\] autoscale: promoted to processes of its own \(1 worker\(s\)\), promote: its runs took \d+ % of a thread/.test(
            l,
          ),
        ),
      );
      // The new process is started and not loaded yet: what comes now goes to the old slot, or waits.
      await waitFor(() => h.processes.live().length === 2, 'the new process');
      const own = h.processes.live()[1];
      const during = send(h, 6);
      await settle();
      assert.ok(host.batches.length > 0, 'requests are in the old slot’s hands during the move');
      await waitFor(() => own.loads.length > 0, 'its Load');
      own.load();
      await settle();
      // Loaded: the new process takes what waited; the old slot finishes what it holds, then is released.
      assert.ok(own.batches.length > 0, 'the queue went to the new process');
      await answerUntilSettled(
        during,
        () => [own, host].forEach((p) => answerAndCount(h, p)),
        'every request of the move to be answered',
      );
      await waitFor(() => model.workers.length === 1 && model.workers[0].sharedHostId === null, 'the old slot to go');
      await waitFor(() => host.slots.size === 1, 'the host to release a');
      assert.deepEqual(new Set((await Promise.all([...all, ...during])).map((r) => r.status)), new Set([200]));
      assert.equal(model.autoscaler!.status.placement, 'dedicated');
      assert.equal(h.manager.registry.servingCount(), 2);
      // Still hot in its own process (its handler's time is what it would take of a host): it stays there.
      const hot = { until: h.clock.now() + 10_000 };
      await untilRound(
        h,
        () => h.clock.now() >= hot.until,
        'ten hot seconds',
        async () => {
          all.push(...send(h, 1));
          await settle();
          answerAndCount(h, own, kHotMicros);
        },
      );
      assert.deepEqual(h.events, ['a up promote'], 'not demoted while hot');

      // Quiet, but the host is full (max_models_per_worker=2, with b and c): a stays in its process.
      await load(h, 'c');
      await untilRound(
        h,
        () => h.events.length > 1,
        'the first demotion',
        () => answerAndCount(h, own),
      );
      await waitFor(() => h.logs.some((l) => l.startsWith('[a] autoscale: demote not done: nowhere to go')), 'the log');
      assert.ok(h.logs.some((l) => /^\[a\] worker a-w\d+ stays where it is: .*max_models_per_worker/.test(l)));
      assert.equal(model.mode, 'dedicated');
      assert.equal(own.alive, true);
      const stayed = send(h, 2);
      await settle();
      answerAndCount(h, own);
      assert.deepEqual(new Set((await Promise.all(stayed)).map((r) => r.status)), new Set([200]));
      // Room again: after autoscale_idle_seconds under half the threshold, back into the shared host.
      await h.manager.lifecycle.unload('c');
      await untilRound(
        h,
        () => h.events.length > 2,
        'the demotion',
        () => answerAndCount(h, own),
      );
      assert.deepEqual(h.events, ['a up promote', 'a down demote', 'a down demote']);
      assert.equal(model.mode, 'shared');
      const back = send(h, 6);
      await settle();
      assert.ok(own.batches.length > 0, 'requests are in the own process’s hands during the move back');
      await waitFor(() => host.loads.length > 0, 'the Load in the shared host');
      host.load();
      await settle();
      await answerUntilSettled(
        back,
        () => [host, own].forEach((p) => answerAndCount(h, p)),
        'every request of the move to be answered',
      );
      await waitFor(() => !own.alive, 'the own process to stop');
      assert.deepEqual(new Set((await Promise.all(back)).map((r) => r.status)), new Set([200]));
      assert.equal(model.workers.length, 1);
      assert.equal(model.workers[0].sharedHostId, 'host-1');
      assert.equal(model.autoscaler!.status.placement, 'shared');
      assert.ok(h.logs.some((l) => /^\[a\] autoscale: demote done; its workers are in host-1$/.test(l)));
      const counts = [...h.answered.values()];
      assert.equal(
        counts.length,
        all.length + during.length + stayed.length + back.length,
        'every request was answered',
      );
      assert.ok(
        counts.every((n) => n === 1),
        'no request was answered twice',
      );
    });
  });
});
