/**
 * memory_limit_mb where the server cannot make cgroups: the memory watch, on the virtual clock with
 * fake processes, alone and in the lifecycle core (fake worker processes; the fakes have no cgroups,
 * so the server runs in its no-cgroup mode).
 */
import assert from 'node:assert/strict';
import { MemoryWatch } from '../../../src/server/processes/limit-enforcement';
import { waitFor } from '../../../harness/process-probes';
import { VirtualClock } from '../../helpers/virtual-clock';
import { harness, invokeRequest, statusOf } from '../../lifecycle/harness';

const MB = 2 ** 20;

function fakeProcess(pid: number, bytes: number) {
  const p = {
    pid,
    bytes,
    killed: [] as string[],
    measureMemory: () => Promise.resolve(p.bytes),
    kill: (reason: string, causedBy: string) => p.killed.push(`${reason} for ${causedBy}`),
  };
  return p;
}

describe('memory watch: memory_limit_mb without cgroups', () => {
  it("measures the model's workers every interval while any runs, and stops the largest once their sum is past the limit", async () => {
    const clock = new VirtualClock();
    const logs: string[] = [];
    const watch = new MemoryWatch('m', 100 * MB, { clock, log: (l) => logs.push(l) });
    const [small, large] = [fakeProcess(1, 30 * MB), fakeProcess(2, 60 * MB)];
    watch.joined(small);
    watch.joined(large);
    assert.equal(clock.pending, 1, 'one timer for the model, however many workers');
    clock.advance(1000);
    await waitFor(() => clock.pending === 1, 'the check to re-arm');
    assert.deepEqual([small.killed, large.killed], [[], []], 'under the limit: nothing stopped');
    large.bytes = 80 * MB;
    clock.advance(1000);
    await waitFor(() => large.killed.length === 1, 'the largest to be stopped');
    assert.deepEqual([small.killed, large.killed], [[], ['memory-limit for m']]);
    assert.match(logs[0], /^\[m\] its workers use 110 MB, past memory_limit_mb=100: stopping worker pid 2/);
    // Until its exit the killed one still measures: it is out of the sums, so its neighbour is not stopped for it.
    await waitFor(() => clock.pending === 1, 'the check to re-arm');
    clock.advance(1000);
    await waitFor(() => clock.pending === 1, 'the next check');
    assert.deepEqual(small.killed, []);
    assert.equal(watch.left(large), false, "the watch's kill is the server's own: no cgroup evidence to add");
    watch.left(small);
    assert.equal(clock.pending, 0, 'no worker, no timer');
  });

  it('in the lifecycle core: the worker past the limit is stopped, its request answers 507 naming memory_limit_mb, the model restarts; cpu_limit is refused at load with why', async () => {
    let limitedBytes = 40 * MB;
    const h = harness('', { memoryBytes: (m) => (m === 'limited' ? limitedBytes : 10 * MB), autoExit: false });
    await h.manager.lifecycle.load({ modelName: 'limited', url: h.model('limited'), memoryLimitMb: 150 });
    await h.manager.lifecycle.load({ modelName: 'neighbour', url: h.model('neighbour') });
    assert.equal(h.manager.registry.get('limited').memoryBytes, 150 * MB, 'the budget counts the limit');
    assert.ok(h.logs.some((l) => /memory_limit_mb=150 \(150 MB\) is watched by the server/.test(l)));
    const [w1] = h.fleet.live('limited');
    const running = statusOf(h.manager.onDemand.invoke('limited', invokeRequest()));
    await waitFor(() => w1.batches.length === 1, 'dispatch');
    limitedBytes = 400 * MB;
    h.clock.advance(1000);
    await waitFor(() => w1.killedBy === 'memory-limit', 'the watch to stop the worker');
    assert.equal(h.fleet.live('neighbour')[0].killedBy, null);
    w1.exit('SIGKILL');
    const failed = await running;
    assert.equal(failed.status, 507);
    assert.match(failed.error!.message, /went past its memory_limit_mb/);
    limitedBytes = 40 * MB;
    h.clock.advance(0);
    await waitFor(() => h.fleet.live('limited').length === 1 && h.fleet.live('limited')[0] !== w1, 'the restart');
    const refused = await statusOf(h.manager.lifecycle.load({ modelName: 'cpu', url: h.model('cpu'), cpuLimit: 0.5 }));
    assert.equal(refused.status, 400);
    assert.match(
      refused.error!.message,
      /cpu_limit=0.5, which this server cannot enforce: it cannot make cgroups \(fake processes\)/,
    );
    const closing = h.manager.close(0);
    await waitFor(() => h.fleet.live().every((w) => w.killedBy === 'stopped'), 'shutdown to kill the workers');
    for (const w of h.fleet.live()) w.exit('SIGKILL');
    await closing;
  });
});
