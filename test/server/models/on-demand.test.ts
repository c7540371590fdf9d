/**
 * The on-demand loader (models/on-demand.ts), with the self-managed cache on: an invoke for a model
 * in model_store loads it, concurrent invokes share that one load, a hit starts nothing, an unknown
 * name is a 404, a failed on-demand load is answered from the negative cache for
 * load_failure_cache_seconds, and an invoke waits at most load_wait_timeout. Driven through the
 * ModelManager on fake worker processes, on a virtual clock.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { FakeProcess } from '../../lifecycle/fake-process';
import {
  answeredStatuses,
  processHarness,
  statusOf,
  invokeRequest,
  type ProcessHarness,
} from '../../lifecycle/harness';
import { waitFor } from '../../../harness/process-probes';
import { settle } from '../../helpers/settle';

function cache(properties = ''): ProcessHarness {
  return processHarness(`model_cache=on\n${properties}`);
}

const invoke = (h: ProcessHarness, name = 'a') => statusOf(h.manager.onDemand.invoke(name, invokeRequest()));

/** Waits for the `n`th worker process to receive its Load; returns it. */
async function loadReaches(h: ProcessHarness, n: number): Promise<FakeProcess> {
  await waitFor(
    () => h.processes.all.length === n && h.processes.all[n - 1].loads.length === 1,
    `load ${n} to reach its worker`,
  );
  return h.processes.all[n - 1];
}

/** Answers every batch `p` holds until `pending` have all settled. */
const answerAll = (p: FakeProcess, pending: Array<Promise<{ status: number }>>) => answeredStatuses(pending, () => [p]);

describe('on-demand loader (model_cache on, fake processes, virtual clock)', () => {
  it('loads a model from model_store on its first invoke; three concurrent invokes share one load, and the next is a hit', async () => {
    const h = cache();
    h.model('a');
    assert.equal(h.manager.onDemand.knows('a'), true);
    assert.equal(h.manager.registry.registered('a'), false);
    const first = [invoke(h), invoke(h), invoke(h)];
    const p = await loadReaches(h, 1);
    await settle();
    assert.equal(h.processes.all.length, 1, 'one worker for the three invokes');
    p.load();
    assert.deepEqual(await answerAll(p, first), [200, 200, 200]);
    assert.deepEqual(
      { hits: h.manager.events.stats.hits, misses: h.manager.events.stats.misses, loads: h.manager.events.stats.loads },
      { hits: 0, misses: 3, loads: 1 },
    );
    assert.deepEqual(await answerAll(p, [invoke(h)]), [200]);
    assert.equal(h.manager.events.stats.hits, 1);
    assert.equal(h.processes.all.length, 1);
    await h.manager.close(0);
  });

  it('answers a name that is in neither the store nor loaded with 404, and a name that is not a path segment with 400, starting nothing', async () => {
    const h = cache();
    assert.equal(h.manager.onDemand.knows('missing'), false);
    const missing = await invoke(h, 'missing');
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'MME_ERR_MODEL_NOT_FOUND');
    const bad = await invoke(h, '../a');
    assert.equal(bad.status, 400);
    await settle();
    assert.equal(h.processes.all.length, 0);
    await h.manager.close(0);
  });

  it("answers invokes with a failed on-demand load's error for load_failure_cache_seconds, then loads again", async () => {
    const h = cache('load_failure_cache_seconds=10');
    h.model('a');
    const first = invoke(h);
    (await loadReaches(h, 1)).load('bad graph');
    const failed = await first;
    assert.equal(failed.code, 'MME_ERR_INVALID_MODEL');
    await waitFor(
      () => !h.manager.registry.registered('a') && h.manager.registry.current('a') === undefined,
      'the failed load to be released',
    );
    h.clock.advance(10_000);
    const cached = await invoke(h);
    assert.equal(cached.code, 'MME_ERR_INVALID_MODEL');
    assert.equal(cached.error!.cause, failed.error, 'the very error of the load, at once');
    assert.equal(cached.error!.status, failed.error!.status);
    assert.match(
      cached.error!.message,
      /^Model a failed to load recently and is not retried for 1 more s \(load_failure_cache_seconds\); to retry now, fix its files in model_store or send DELETE \/models\/a\. The failure: /,
    );
    assert.ok(cached.error!.message.endsWith(failed.error!.message));
    assert.equal(cached.error!.headers['Retry-After'], '1');
    assert.equal(h.processes.all.length, 1, 'no second load inside the 10 s');
    h.clock.advance(1);
    const retried = invoke(h);
    const p = await loadReaches(h, 2);
    p.load();
    assert.deepEqual(await answerAll(p, [retried]), [200]);
    await h.manager.close(0);
  });

  it('forgets a remembered failure on an explicit load of the name', async () => {
    const h = cache('load_failure_cache_seconds=60');
    const url = h.model('a');
    const first = invoke(h);
    (await loadReaches(h, 1)).load('bad graph');
    assert.equal((await first).code, 'MME_ERR_INVALID_MODEL');
    await waitFor(() => h.manager.registry.current('a') === undefined, 'the failed load to be released');
    const explicit = statusOf(h.manager.lifecycle.load({ modelName: 'a', url }));
    (await loadReaches(h, 2)).load();
    assert.equal((await explicit).status, 200);
    const after = invoke(h);
    assert.deepEqual(await answerAll(h.processes.all[1], [after]), [200]);
    await h.manager.close(0);
  });

  it("forgets a remembered failure on DELETE /models/{name}, which answers as an unload (no 404), and when the model's files change", async () => {
    const h = cache('load_failure_cache_seconds=60');
    const dir = h.model('a');
    const failOnce = async (n: number) => {
      const first = invoke(h);
      (await loadReaches(h, n)).load('bad graph');
      assert.equal((await first).code, 'MME_ERR_INVALID_MODEL');
      await waitFor(() => h.manager.registry.current('a') === undefined, 'the failed load to be released');
      assert.equal((await invoke(h)).error!.headers['Retry-After'], '60', 'remembered');
    };
    await failOnce(1);
    await h.manager.lifecycle.unload('a');
    assert.ok(h.logs.some((l) => l.includes('[a] its remembered load failure was forgotten (DELETE /models/a)')));
    await failOnce(2);
    // A fixed handler written in place: the directory's own mtime does not move, the file's size does.
    fs.writeFileSync(path.join(dir, 'handler.js'), 'exports.handle = async (requests) => requests.map(() => "{}");\n');
    const retried = invoke(h);
    const p = await loadReaches(h, 3);
    p.load();
    assert.deepEqual(await answerAll(p, [retried]), [200]);
    assert.equal(
      (await statusOf(h.manager.lifecycle.unload('b'))).status,
      404,
      'a name with nothing remembered is still 404',
    );
    await h.manager.close(0);
  });

  it('gives an invoke that waited load_wait_timeout (jittered up to twice) a 503 with Retry-After; the load goes on and serves the next one', async () => {
    const h = cache('load_wait_timeout=1');
    h.model('a');
    const waiting = invoke(h);
    const p = await loadReaches(h, 1);
    h.clock.advance(999);
    await settle();
    let settled = false;
    void waiting.then(() => (settled = true));
    await settle();
    assert.equal(settled, false, 'not before load_wait_timeout');
    h.clock.advance(1001);
    const late = await waiting;
    assert.equal(late.status, 503);
    assert.equal(late.code, 'MME_ERR_MODEL_LOADING');
    assert.equal(late.error!.headers?.['Retry-After'], '1');
    p.load();
    await waitFor(() => h.manager.registry.registered('a'), 'the load to finish');
    assert.deepEqual(await answerAll(p, [invoke(h)]), [200]);
    await h.manager.close(0);
  });
});
