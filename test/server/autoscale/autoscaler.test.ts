/**
 * Per-model autoscaling (workers/autoscaler.ts, applied by LifecycleOperations.autoscale each
 * round): the policy alone on a virtual clock, then through the ModelManager on fake worker
 * processes, where a round runs only when the test advances the clock past it. Up under a queue,
 * one worker at a time; a scale-up the memory budget has no room for skipped and counted (no 507,
 * no eviction of a busy model, an idle one may go); down after the idle period, never below
 * min_worker; no flapping.
 */
import assert from 'node:assert/strict';
import { AutoscaleRounds, kRoundMs, type ScaledEntry } from '../../../src/server/autoscale/autoscale-rounds';
import { Autoscaler, type Decision } from '../../../src/server/autoscale/autoscaler';
import { waitFor } from '../../../harness/process-probes';
import {
  answeredStatuses,
  processHarness,
  statusOf,
  invokeRequest,
  type ProcessHarness,
} from '../../lifecycle/harness';
import { VirtualClock } from '../../helpers/virtual-clock';
import { kAutoscaleSettings as kSettings } from '../../helpers/autoscale-settings';
import { settle } from '../../helpers/settle';

const MiB = 2 ** 20;
/** autoscale_cores: the worker counts here are the test's, whatever this machine's cores (its own tests set it lower). */
const kProperties =
  'autoscale_queue_wait_ms=100\nautoscale_idle_seconds=5\nautoscale_cooldown_seconds=3\nautoscale_cores=16';

/**
 * One round of virtual time, then the round it started is waited for as an event: it measures memory
 * (real I/O on a busy machine takes more than a few turns), and the next round is armed only after it.
 */
async function step(h: ProcessHarness): Promise<void> {
  h.clock.advance(kRoundMs);
  await settle();
  await h.manager.autoscale?.settled();
  await settle();
}

/** Advances the clock round by round for `ms`, letting each round finish. */
async function run(h: ProcessHarness, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += kRoundMs) await step(h);
}

/** Advances round by round until `cond` holds (at most a minute of virtual time); returns the virtual ms it took. */
async function until(h: ProcessHarness, cond: () => boolean, what: string): Promise<number> {
  const t0 = h.clock.now();
  while (!cond()) {
    assert.ok(h.clock.now() - t0 < 60_000, `${what}: not within a minute of virtual time`);
    await step(h);
  }
  return h.clock.now() - t0;
}

interface Seen {
  events: string[];
  workers: Map<string, number>;
}

/** Model `a` loaded with min_worker 1 and max_worker `max`, workers that load at once; the metric hooks recorded. */
async function loaded(max: number, properties = kProperties, memory?: number): Promise<ProcessHarness & Seen> {
  const h = processHarness(properties, { autoLoad: true }, memory ? async () => memory : undefined);
  const seen: Seen = { events: [], workers: new Map() };
  h.manager.events.sink = {
    autoscaleEvent: (model, direction, reason) => seen.events.push(`${model} ${direction} ${reason}`),
    modelWorkers: (model, n) => seen.workers.set(model, n),
  };
  await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a'), minWorkers: 1 });
  await h.manager.lifecycle.scale('a', 1, max, true);
  return { ...h, ...seen };
}

/** `n` requests to `a`, none answered yet. */
function burst(h: ProcessHarness, n: number): Array<Promise<{ status: number; code?: string }>> {
  return Array.from({ length: n }, () => statusOf(h.manager.onDemand.invoke('a', invokeRequest())));
}

/** Answers every batch the live processes hold until the requests are all settled. */
const answerAll = (h: ProcessHarness, requests: Array<Promise<{ status: number }>>) =>
  answeredStatuses(requests, () => h.processes.live());

const liveWorkers = (h: ProcessHarness) => h.manager.registry.get('a').workers.filter((w) => w.state === 'ready');

describe('autoscaler', () => {
  describe('the policy (virtual clock)', () => {
    const dedicated = { mode: 'dedicated', home: 'dedicated', ranMicros: 0, completed: 0, moving: false } as const;
    const load = (workers: number, queued: number) => ({ workers, min: 1, max: 4, queued, ...dedicated });

    it('asks for one worker more when the median queue wait passes the threshold, and nothing in the cooldown after', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      for (const ms of [0, 150, 150, 200, 20]) s.waited(ms);
      const d = s.decide(load(1, 1));
      assert.deepEqual([d?.direction, d?.reason, d?.target], ['up', 'queue_wait', 2]);
      assert.equal(s.decide(load(1, 1)), null, 'nothing while the decision is applied');
      s.applied(d!);
      clock.advance(2999);
      for (const ms of [150, 150, 150]) s.waited(ms);
      assert.equal(s.decide(load(2, 1)), null, 'nothing within the cooldown');
      clock.advance(1);
      assert.equal(s.decide(load(2, 1))?.target, 3);
    });

    it('forgets waits older than the window, and never asks past max_worker', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      for (let i = 0; i < 5; i++) s.waited(500);
      clock.advance(2001);
      assert.equal(s.medianWaitMs(), 0);
      assert.equal(s.decide(load(1, 0)), null);
      for (let i = 0; i < 5; i++) s.waited(500);
      assert.equal(s.decide({ ...load(4, 100), max: 4 }), null);
    });

    it('does not flap: a steady wait between a quarter of the threshold and the threshold changes nothing in ten minutes', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      const decisions: Decision[] = [];
      for (let t = 0; t < 600_000; t += kRoundMs) {
        for (let i = 0; i < 10; i++) s.waited(60);
        const d = s.decide(load(2, 2));
        if (d) decisions.push(d);
        clock.advance(kRoundMs);
      }
      assert.deepEqual(decisions, []);
    });

    /** Rounds of kRoundMs in which the model's runs take `share` of wall time, nothing queued; the decisions asked. */
    function busyRounds(s: Autoscaler, clock: VirtualClock, workers: number, share: number, ms: number): Decision[] {
      const decisions: Decision[] = [];
      for (let t = 0; t < ms; t += kRoundMs) {
        clock.advance(kRoundMs);
        ran += share * kRoundMs * 1000;
        const d = s.decide({ ...load(workers, 0), ranMicros: ran });
        if (d) {
          decisions.push(d);
          if (!d.skipped) s.applied(d);
        }
      }
      return decisions;
    }
    let ran = 0;
    beforeEach(() => (ran = 0));

    it('asks for one worker more when its runs take over autoscale_busy_share of its one worker at two rounds in a row, with nothing queued', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      assert.deepEqual(busyRounds(s, clock, 1, 0.7, 60_000), [], 'a worker 70 % busy is left alone');
      const [d, ...rest] = busyRounds(s, clock, 1, 0.95, 2500);
      assert.deepEqual([d?.direction, d?.reason, d?.target, rest.length], ['up', 'busy', 2, 0]);
      assert.match(d.why, /over autoscale_busy_share=0\.8 a worker at 2 rounds in a row/);
    });

    it('does not flap on the busy share: a load that would make one worker fewer busy keeps its workers; under half of that, one goes after the idle period', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      // Two workers at 1.0 of a thread between them: 0.5 each, under 0.8, but one would be over 0.4.
      assert.deepEqual(busyRounds(s, clock, 2, 1.0, 600_000), []);
      const [d] = busyRounds(s, clock, 2, 0.3, 10_000);
      assert.deepEqual([d?.direction, d?.reason, d?.target], ['down', 'idle', 1]);
    });

    it('never scales past the workers the cores run at once (autoscale_cores): the scale-up is skipped, counted, and the cooldown holds the next try back', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler({ ...kSettings, cpuWorkers: 2 }, clock);
      for (const ms of [150, 150, 150]) s.waited(ms);
      // Its first round with the queue did not see it all through (what the server's process takes is not known yet): the next decides.
      assert.equal(s.decide(load(1, 1)), null);
      clock.advance(kRoundMs);
      const first = s.decide(load(1, 1));
      assert.deepEqual(
        [first?.reason, first?.target, first?.skipped],
        ['queue_wait', 2, undefined],
        'one worker fewer than the cores: up',
      );
      s.applied(first!);
      clock.advance(3000);
      for (const ms of [150, 150, 150]) s.waited(ms);
      const d = s.decide(load(2, 9));
      assert.deepEqual([d?.direction, d?.reason, d?.target, d?.skipped], ['up', 'queue_wait', 3, 'no_cores']);
      assert.match(d!.why, /skipped: 2 worker\(s\) is the most the cores run at once \(autoscale_cores/);
      assert.equal(s.status.skippedForCores, 1);
      assert.deepEqual(s.status.lastDecision, {
        direction: 'up',
        reason: 'queue_wait',
        outcome: 'skipped',
        why: d!.why,
      });
      clock.advance(2999);
      assert.equal(s.decide(load(2, 9)), null, 'nothing within the cooldown');
      clock.advance(1);
      assert.equal(s.decide(load(2, 9))?.skipped, 'no_cores', 'skipped again, not pending');
      assert.equal(s.status.skippedForCores, 2);
      // The busy share, over the cores too: a worker that only takes turns for a core reads busier.
      const busy = new Autoscaler({ ...kSettings, cpuWorkers: 1 }, clock);
      const decisions = busyRounds(busy, clock, 1, 1.0, 2000).map((x) => [x.reason, x.skipped]);
      assert.deepEqual(decisions, [['busy', 'no_cores']]);
      assert.equal(busy.status.skippedForCores, 1);
    });

    it("counts the server's own process as a user of the cores it keeps busy more than half the time", async () => {
      const clock = new VirtualClock();
      const s = new Autoscaler({ ...kSettings, cpuWorkers: 2 }, clock);
      // The rounds tell each autoscaler what the server's process took: here 0.9 of a core over the 0.5 s round.
      let cpu = 0;
      const rounds = new AutoscaleRounds({
        clock,
        // Loading: the round measures for it, and its step leaves it alone.
        entries: () => [{ name: 'a', phase: 'loading', model: { autoscaler: s } } as unknown as ScaledEntry],
        tryLock: () => null,
        current: () => undefined,
        reserve: async () => 0,
        autoscaled: () => undefined,
        workers: () => undefined,
        log: () => undefined,
        cpuMicros: () => cpu,
      });
      rounds.start();
      cpu += 0.9 * kRoundMs * 1000;
      clock.advance(kRoundMs);
      await rounds.settled();
      rounds.stop();
      assert.equal(s.serverCores, 0.9);
      for (const ms of [150, 150, 150]) s.waited(ms);
      const d = s.decide(load(1, 9));
      assert.deepEqual([d?.direction, d?.reason, d?.target, d?.skipped], ['up', 'queue_wait', 2, 'no_cores']);
      assert.match(
        d!.why,
        /skipped: 1 worker\(s\) is the most the cores run at once \(autoscale_cores over onnx_intra_op_threads, less 1 core\(s\) the server's own process keeps busy\)/,
      );
      // Under half a core: the second worker fits beside it.
      clock.advance(3000);
      s.serverCores = 0.4;
      for (const ms of [150, 150, 150]) s.waited(ms);
      const up = s.decide(load(1, 9));
      assert.deepEqual([up?.target, up?.skipped], [2, undefined]);
    });

    it('counts the scale-ups skipped in a row until the model scales or stops asking, so a model held at its limit is not logged at every cooldown', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler({ ...kSettings, cpuWorkers: 1 }, clock);
      const ask = (workers: number) => {
        for (const ms of [150, 150, 150]) s.waited(ms);
        return s.decide(load(workers, 9));
      };
      assert.equal(ask(1)?.skipped, 'no_cores');
      assert.equal(s.skipsInARow, 1);
      clock.advance(3000);
      assert.equal(ask(1)?.skipped, 'no_cores');
      s.skippedForMemory({ direction: 'up', reason: 'backlog', target: 2, why: 'x' }, 'no room');
      assert.equal(s.skipsInARow, 3, 'a memory skip continues the run');
      // The waits leave the window and nothing is queued: a round past the cooldown that asks for nothing ends the run.
      clock.advance(3000);
      assert.equal(s.decide(load(1, 0)), null);
      assert.equal(s.skipsInARow, 0);
      clock.advance(3000);
      assert.equal(ask(1)?.skipped, 'no_cores');
      assert.equal(s.skipsInARow, 1, 'the next skip starts a new run');
      // Scaling ends a run too (here cores allow two).
      const two = new Autoscaler({ ...kSettings, cpuWorkers: 2 }, clock);
      for (const ms of [150, 150, 150]) two.waited(ms);
      assert.equal(two.decide(load(1, 9)), null, 'the round before saw no queue');
      clock.advance(kRoundMs);
      const up = two.decide(load(1, 9))!;
      two.skippedForMemory(up, 'no room');
      assert.equal(two.skipsInARow, 1);
      clock.advance(3000);
      for (const ms of [150, 150, 150]) two.waited(ms);
      two.applied(two.decide(load(1, 9))!);
      assert.equal(two.skipsInARow, 0);
    });

    it('autoscale_busy_share=0 never scales on the busy share', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler({ ...kSettings, busyShare: 0 }, clock);
      assert.deepEqual(busyRounds(s, clock, 1, 1.0, 60_000), []);
    });

    /**
     * Rounds of kRoundMs for `ms` in which the model completes `rate` requests a second with
     * `queued` waiting (a backlog while over 4 a worker); applies each decision but a skip; the decisions.
     */
    function servedRounds(
      s: Autoscaler,
      clock: VirtualClock,
      at: { workers: number },
      rate: number,
      queued: number,
      ms: number,
    ) {
      const decisions: Decision[] = [];
      for (let t = 0; t < ms; t += kRoundMs) {
        clock.advance(kRoundMs);
        done += (rate * kRoundMs) / 1000;
        const d = s.decide({ ...load(at.workers, queued), completed: done });
        if (!d) continue;
        decisions.push(d);
        if (d.skipped) continue;
        s.applied(d);
        at.workers = d.target;
      }
      return decisions.map((d) => `${d.direction} ${d.reason} ${d.target}${d.skipped ? ` skipped ${d.skipped}` : ''}`);
    }
    let done = 0;
    beforeEach(() => (done = 0));

    it('undoes a scale-up after which the model completes no more requests while it still asks for more, and tries none for autoscale_idle_seconds', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      const at = { workers: 1 };
      assert.deepEqual(servedRounds(s, clock, at, 100, 0, 2000), [], 'serving its load, nothing queued');
      // A backlog: one worker more; its cooldown (3 s) passes and the model completes 100 a second as before, 20 still queued.
      assert.deepEqual(servedRounds(s, clock, at, 100, 20, 500), ['up backlog 2']);
      assert.deepEqual(servedRounds(s, clock, at, 102, 20, 2500), [], 'judged only once its cooldown is over');
      assert.deepEqual(servedRounds(s, clock, at, 102, 20, 500), ['down no_gain 1']);
      assert.match(
        s.status.lastDecision!.why,
        /^102 requests a second completed with 2 worker\(s\) against 100 before the scale-up, and still median queue wait/,
      );
      // The backlog stays: each cooldown the scale-up is skipped, until autoscale_idle_seconds (5 s) after the undo.
      assert.deepEqual(servedRounds(s, clock, at, 100, 20, 4500), ['up backlog 2 skipped no_gain']);
      assert.match(
        s.status.lastDecision!.why,
        /skipped: a scale-up did not help within the last autoscale_idle_seconds=5$/,
      );
      assert.deepEqual(
        servedRounds(s, clock, at, 100, 20, 1500),
        ['up backlog 2'],
        'tried again once the hold is over',
      );
    });

    it('keeps a scale-up that raised the completed requests, and one after which nothing waits any more', () => {
      const clock = new VirtualClock();
      const s = new Autoscaler(kSettings, clock);
      const at = { workers: 1 };
      servedRounds(s, clock, at, 100, 0, 2000);
      assert.deepEqual(servedRounds(s, clock, at, 100, 20, 500), ['up backlog 2']);
      // Twice the requests with two workers, still a backlog: the next scale-up, not an undo.
      assert.deepEqual(servedRounds(s, clock, at, 200, 20, 3000), ['up backlog 3']);
      // As many completed with three, but the queue is gone: the worker cut the waits, so it stays.
      assert.deepEqual(servedRounds(s, clock, at, 200, 0, 4000), []);
      assert.equal(at.workers, 3);
    });
  });

  describe('on fake worker processes (virtual clock)', () => {
    it('scales up under a backlog one worker at a time, to max_worker and no further, with an event and the gauge', async () => {
      const h = await loaded(3);
      const requests = burst(h, 60);
      await settle();
      assert.equal(h.manager.registry.get('a').workerTarget, 1);
      assert.equal(h.workers.get('a'), 1);
      await until(h, () => h.manager.registry.get('a').workerTarget === 2, 'the first scale-up');
      await waitFor(() => liveWorkers(h).length === 2, 'the second worker to load');
      assert.deepEqual(h.events, ['a up backlog']);
      assert.equal(h.workers.get('a'), 2);
      assert.ok(h.logs.some((l) => /\[a\] autoscale: up to 2 worker\(s\), backlog: .*queued for 1 worker/.test(l)));
      // The new worker took its share of the queue, but what is left is still a backlog: one more, after the cooldown.
      const took = await until(h, () => h.manager.registry.get('a').workerTarget === 3, 'the second scale-up');
      assert.ok(took >= 3000, `the second scale-up came ${took} ms after the first, within the 3 s cooldown`);
      await waitFor(() => liveWorkers(h).length === 3, 'the third worker to load');
      await run(h, 10_000);
      assert.equal(h.manager.registry.get('a').workerTarget, 3, 'never past max_worker');
      assert.deepEqual(h.events, ['a up backlog', 'a up backlog']);
      const status = h.manager.registry.get('a').autoscaler!.status;
      assert.equal(status.lastDecision?.direction, 'up');
      assert.equal(status.lastDecision?.outcome, 'applied');
      assert.deepEqual(new Set(await answerAll(h, requests)), new Set([200]));
    });

    /** The events, a scale-up's reason left out (the queue wait or the backlog, whichever a round sees first). */
    const asked = (h: Seen) => h.events.map((e) => e.replace(/^(a up) (backlog|queue_wait)$/, '$1'));

    /** Answers `n` batches, one at a time, from whichever live process holds one. */
    async function answerBatches(h: ProcessHarness, n: number): Promise<void> {
      const holding = () => h.processes.live().find((p) => p.batches.length > 0);
      for (let i = 0; i < n; i++) {
        await waitFor(() => holding() !== undefined, 'a batch to answer');
        holding()!.answer();
      }
    }

    for (const gain of [false, true])
      it(`${gain ? 'keeps' : 'undoes'} a scale-up after which the workers answer ${gain ? 'twice as many' : 'no more'} requests with the backlog still there${gain ? '' : ': one worker again, logged and counted, and the next scale-up skipped until autoscale_idle_seconds'}`, async () => {
        // At max_worker 1 first, so the rounds before the scale-up see the rate it is judged against.
        const h = await loaded(1, `${kProperties}\njob_queue_size=2000`);
        const requests = burst(h, 2000);
        /** Rounds for `ms`, or until `done`: three batches answered in each (up to 8 requests each), from one worker or from all; or three from each. */
        const serve = async (ms: number, done = () => false) => {
          for (let t = 0; t < ms && !done(); t += kRoundMs) {
            await answerBatches(h, gain ? 3 * liveWorkers(h).length : 3);
            await step(h);
          }
        };
        await serve(2000);
        await h.manager.lifecycle.scale('a', 1, 3, true);
        await serve(500, () => h.manager.registry.get('a').workerTarget === 2);
        await waitFor(() => liveWorkers(h).length === 2, 'the second worker to load');
        await serve(3000);
        if (gain) {
          assert.deepEqual(asked(h), ['a up', 'a up'], 'kept, and one more asked for');
        } else {
          assert.deepEqual(asked(h), ['a up', 'a down no_gain']);
          assert.equal(h.manager.registry.get('a').workerTarget, 1);
          assert.ok(
            h.logs.some((l) =>
              /^\[a\] autoscale: down to 1 worker\(s\), no_gain: \d+ requests a second completed with 2 worker/.test(l),
            ),
          );
          await serve(3000);
          assert.deepEqual(asked(h).slice(2), ['a up no_gain'], 'the backlog asks again: skipped');
          assert.equal(h.manager.registry.get('a').workerTarget, 1);
        }
        assert.deepEqual(new Set(await answerAll(h, requests)), new Set([200]));
      });

    it('stops at the workers autoscale_cores runs at once: the scale-up past it is skipped, logged and counted, and every request answered', async () => {
      const h = await loaded(3, `${kProperties}\nautoscale_cores=2`);
      const requests = burst(h, 60);
      await settle();
      await until(h, () => h.manager.registry.get('a').workerTarget === 2, 'the first scale-up');
      await until(h, () => h.events.length === 2, 'the next decision');
      assert.deepEqual(h.events, ['a up backlog', 'a up no_cores']);
      assert.equal(h.manager.registry.get('a').workerTarget, 2);
      assert.equal(h.manager.registry.get('a').autoscaler!.status.skippedForCores, 1);
      // Skipped again after the cooldown: counted again, logged once for the run.
      await until(h, () => h.events.length === 3, 'the next try');
      assert.deepEqual(h.events.slice(2), ['a up no_cores']);
      assert.equal(h.logs.filter((l) => l.startsWith('[a] autoscale: not scaling up')).length, 1);
      assert.ok(
        h.logs.some((l) =>
          /^\[a\] autoscale: not scaling up to 3 worker\(s\), backlog: .*skipped: 2 worker\(s\) is the most the cores run at once/.test(
            l,
          ),
        ),
      );
      assert.deepEqual(new Set(await answerAll(h, requests)), new Set([200]));
    });

    it('scales up on the median queue wait when the backlog is under its threshold', async () => {
      const h = await loaded(2, `${kProperties}\nautoscale_backlog_per_worker=1000`);
      const requests = burst(h, 30);
      await settle();
      // Two requests went at once (the pipeline); the rest wait 400 ms, then go eight to a frame.
      h.clock.advance(400);
      await settle();
      const [p] = h.processes.live();
      // Until the queue is empty, not until the pipe is: a frame still on its way is not a drained queue.
      while (p.batches.length > 0 || h.manager.registry.get('a').queueLength > 0) {
        p.answer();
        await settle();
      }
      await until(h, () => h.manager.registry.get('a').workerTarget === 2, 'the scale-up');
      assert.deepEqual(h.events, ['a up queue_wait']);
      assert.match(h.manager.registry.get('a').autoscaler!.status.lastDecision!.why, /median queue wait [1-9]\d\d ms/);
      assert.deepEqual(new Set(await answerAll(h, requests)), new Set([200]));
    });

    it('skips and counts a scale-up the memory budget has no room for: no 507 to any caller, and the busy model beside it stays', async () => {
      // Every worker measures 60 MB; a and b take 120 of the 150 MB: a second worker of a only fits if b goes.
      const h = await loaded(3, `${kProperties}\nmodel_memory_budget_mb=150`, 60 * MiB);
      await h.manager.lifecycle.load({ modelName: 'b', url: h.model('b'), minWorkers: 1 });
      const busyB = statusOf(h.manager.onDemand.invoke('b', invokeRequest()));
      const requests = burst(h, 60);
      await settle();
      await until(h, () => h.events.length === 1, 'the decision');
      assert.deepEqual(h.events, ['a up no_memory']);
      assert.equal(h.manager.registry.get('a').workerTarget, 1);
      assert.equal(h.manager.registry.get('a').autoscaler!.status.skippedForMemory, 1);
      assert.ok(h.manager.registry.registered('b'), 'b, busy, was not evicted for it');
      assert.ok(h.logs.some((l) => l.startsWith('[a] autoscale: not scaling up to 2 worker(s)')));
      assert.ok(!h.logs.some((l) => /^\[\w+\] evicted /.test(l)), 'nothing was evicted');
      assert.equal(h.manager.events.stats.evictions, 0);
      // The cooldown holds the next try back; it is skipped again, and counted again.
      const took = await until(h, () => h.events.length === 2, 'the next try');
      assert.ok(took >= 3000, `tried again ${took} ms later, within the 3 s cooldown`);
      assert.deepEqual(h.events, ['a up no_memory', 'a up no_memory']);
      assert.equal(
        h.logs.filter((l) => l.startsWith('[a] autoscale: not scaling up')).length,
        1,
        'one line for the run',
      );
      assert.match(h.logs.find((l) => l.startsWith('[a] autoscale: not scaling up'))!, /one line every 100 skips\)$/);
      assert.equal(h.manager.registry.get('a').workerTarget, 1);
      assert.deepEqual(new Set(await answerAll(h, [...requests, busyB])), new Set([200]));
    });

    it('may evict an idle model for the worker (model_cache on): idle is never busier than the model it is for', async () => {
      const h = await loaded(3, `${kProperties}\nmodel_memory_budget_mb=150`, 60 * MiB);
      await h.manager.lifecycle.load({ modelName: 'b', url: h.model('b'), minWorkers: 1 });
      const requests = burst(h, 60);
      await settle();
      await until(h, () => h.manager.registry.get('a').workerTarget === 2, 'the scale-up');
      assert.deepEqual(h.events, ['a up backlog']);
      assert.equal(h.manager.registry.registered('b'), false);
      assert.ok(h.logs.some((l) => /^\[b\] evicted to make room for a .*, idle;/.test(l)));
      assert.deepEqual(new Set(await answerAll(h, requests)), new Set([200]));
    });

    it('scales down after the idle period, one worker each period, never below min_worker', async () => {
      const h = await loaded(3);
      const requests = burst(h, 60);
      await settle();
      // Each scale-up waits for the worker before it to load (a decision is applied before the next
      // is taken), and a load is real I/O (frames over a socketpair): wait for it as an event, not in rounds.
      await until(h, () => h.manager.registry.get('a').workerTarget === 2, 'the first scale-up');
      await waitFor(() => liveWorkers(h).length === 2, 'the second worker');
      await until(h, () => h.manager.registry.get('a').workerTarget === 3, 'the second scale-up');
      await waitFor(() => liveWorkers(h).length === 3, 'the third worker');
      await answerAll(h, requests);
      // Quiet from here: a worker goes after autoscale_idle_seconds (5 s), the next after as long again.
      const first = await until(h, () => h.manager.registry.get('a').workerTarget === 2, 'the first scale-down');
      assert.ok(first >= 5000, `a worker went after ${first} ms of quiet`);
      await waitFor(() => h.processes.live().length === 2, 'one worker to exit');
      assert.equal(h.workers.get('a'), 2);
      const second = await until(h, () => h.manager.registry.get('a').workerTarget === 1, 'the second scale-down');
      assert.ok(second >= 5000, `the next went ${second} ms after the first`);
      await waitFor(() => h.processes.live().length === 1, 'the next worker to exit');
      await run(h, 30_000);
      assert.equal(h.processes.live().length, 1, 'never below min_worker');
      assert.deepEqual(h.events, ['a up backlog', 'a up backlog', 'a down idle', 'a down idle']);
      assert.match(h.manager.registry.get('a').autoscaler!.status.lastDecision!.why, /quiet for 5 s .*min_worker=1/);
    });

    it('leaves the workers alone with max_worker = min_worker, and with autoscale=off', async () => {
      for (const [max, properties] of [
        [1, kProperties],
        [3, 'autoscale=off'],
      ] as const) {
        const h = await loaded(max, properties);
        const requests = burst(h, 60);
        await settle();
        await run(h, 10_000);
        assert.equal(h.manager.registry.get('a').workerTarget, 1);
        assert.deepEqual(h.events, []);
        await answerAll(h, requests);
      }
    });
  });
});
