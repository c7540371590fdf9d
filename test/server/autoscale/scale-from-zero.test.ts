/**
 * min_worker=0 under autoscale (issue 49, C6): a model scaled to no worker with a max_worker above
 * it takes requests into its queue, and the next autoscale round starts a worker for them. It used
 * to refuse each request with MME_ERR_NO_WORKER before it queued, so autoscale never saw the
 * demand and the model refused forever. The policy alone, then the model on fake processes and a
 * virtual clock.
 */
import assert from 'node:assert/strict';
import { kRoundMs } from '../../../src/server/autoscale/autoscale-rounds';
import { Autoscaler } from '../../../src/server/autoscale/autoscaler';
import { waitFor } from '../../../harness/process-probes';
import { processHarness, statusOf, invokeRequest } from '../../lifecycle/harness';
import { VirtualClock } from '../../helpers/virtual-clock';
import { kAutoscaleSettings as kSettings } from '../../helpers/autoscale-settings';
import { settle } from '../../helpers/settle';

const kProperties = ['autoscale=on', 'autoscale_idle_seconds=5', 'autoscale_cooldown_seconds=3', 'autoscale_cores=16'];

describe('autoscale from zero workers (min_worker=0)', () => {
  it('the policy: one request waiting for no worker is enough for one worker, past the cooldown', () => {
    const clock = new VirtualClock();
    const s = new Autoscaler(kSettings, clock);
    clock.advance(kSettings.cooldownMs);
    const load = {
      workers: 0,
      min: 0,
      max: 2,
      mode: 'dedicated',
      home: 'dedicated',
      ranMicros: 0,
      completed: 0,
      moving: false,
    } as const;
    assert.equal(s.decide({ ...load, queued: 0 }), null, 'nothing waiting: nothing to start');
    const d = s.decide({ ...load, queued: 1 });
    assert.deepEqual([d?.direction, d?.reason, d?.target], ['up', 'backlog', 1]);
    assert.match(d!.why, /1 queued for 0 worker\(s\); none running \(min_worker=0\)/);
  });

  it('a model scaled to min_worker=0&max_worker=2 queues a request, starts a worker for it and answers 200; back to none when idle', async () => {
    const h = processHarness(kProperties.join('\n'), { autoLoad: true });
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    await h.manager.lifecycle.scale('a', 0, 2, true);
    const model = h.manager.registry.get('a');
    assert.equal(model.workerTarget, 0);
    const answered = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    await settle();
    assert.equal(model.queueLength, 1, 'the request waits in the queue, not refused');
    // Rounds on the virtual clock until autoscale has started a worker and it holds the request.
    const started = () => h.processes.live().find((p) => p.batches.length > 0);
    for (let t = 0; !started(); t += kRoundMs) {
      assert.ok(t < 60_000, `no worker started within a minute of virtual time:\n${h.logs.join('\n')}`);
      h.clock.advance(kRoundMs);
      await settle();
      await h.manager.autoscale?.settled();
      await settle();
    }
    started()!.answerHeld();
    assert.deepEqual(await answered, { status: 200 });
    assert.ok(
      h.logs.some((l) => /^\[a\] autoscale: up to 1 worker\(s\), backlog: .*none running \(min_worker=0\)/.test(l)),
      h.logs.join('\n'),
    );
    // Quiet for autoscale_idle_seconds: down to min_worker=0 again, its process stopped.
    for (let t = 0; model.workerTarget > 0; t += kRoundMs) {
      assert.ok(t < 60_000, 'not back to no worker within a minute of virtual time');
      h.clock.advance(kRoundMs);
      await settle();
      await h.manager.autoscale?.settled();
    }
    await waitFor(() => h.processes.live().length === 0, 'its process to stop');
  });

  it('without autoscale, a model at min_worker=0 still says at once that it has no worker', async () => {
    const h = processHarness('autoscale=off', { autoLoad: true });
    await h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') });
    await h.manager.lifecycle.scale('a', 0, 2, true);
    const r = await statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
    assert.deepEqual([r.status, r.code], [503, 'MME_ERR_NO_WORKER']);
    assert.match(r.error!.message, /PUT \/models\/a\?min_worker=1/);
  });
});
