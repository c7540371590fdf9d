/**
 * The self-managed cache against real workers: on-demand loading from model_store, single-flight,
 * eviction by policy with in-flight requests finishing, the negative cache, 507 admission.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler, slowLoading } from '../../harness/fault-handlers';
import { addModel, mlpForward, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { assertRowsClose } from '../helpers/assert-close';

const spec = (seed: number) => ({ sizes: [4, 8, 3], seed });
const row = [[1, 2, 3, 4]];

function fillStore(store: string, n: number): void {
  for (let i = 0; i < n; i++) writeModelDir(store, `m${i}`, mlpModel(spec(i)));
}

function assertMlp(res: { status: number; body: unknown; text: string }, seed: number): void {
  assert.equal(res.status, 200, res.text);
  assertRowsClose(res.body, mlpForward(spec(seed), row), `m${seed}`);
}

describe('self-managed model cache', () => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  it('loads a model from model_store on first invoke, by every route', async () => {
    const store = tempDir('mme-store-');
    fillStore(store, 3);
    t = await startTestServer('model_cache=on', { store });
    assertMlp(await invoke(t, 'm0', row), 0);
    assertMlp(
      await request(`${t.url}/invocations`, {
        method: 'POST',
        json: row,
        headers: { 'X-Amzn-SageMaker-Target-Model': 'prefix/m1.tar.gz' },
      }),
      1,
    );
    assertMlp(
      await request(`${t.url}/invocations`, {
        method: 'POST',
        json: row,
        headers: { serve_multiplexed_model_id: 'm2' },
      }),
      2,
    );
    const missing = await invoke(t, 'not-in-store', row);
    assert.equal(missing.status, 404);
    assert.equal((await invoke(t, '..', row)).status, 404);
    const list = (await request(`${t.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName);
    assert.deepEqual(list, ['m0', 'm1', 'm2']);
    assert.equal(t.server.manager.registry.current('m0')?.onDemand, true);
    assert.deepEqual(
      { hits: t.server.manager.events.stats.hits, misses: t.server.manager.events.stats.misses },
      { hits: 0, misses: 3 },
    );
    await invoke(t, 'm0', row);
    assert.equal(t.server.manager.events.stats.hits, 1);
  });

  it('serves 30 concurrent invokes of an unloaded model with exactly one load', async () => {
    const store = tempDir('mme-store-');
    fillStore(store, 1);
    t = await startTestServer('model_cache=on', { store });
    const results = await Promise.all(Array.from({ length: 30 }, () => invoke(t, 'm0', row)));
    for (const r of results) assertMlp(r, 0);
    assert.equal(t.server.manager.events.stats.loads, 1);
    assert.equal(workerPidsOf(process.pid).length, 1);
    assert.equal(t.server.manager.events.stats.misses, 30);
  });

  it('evicts the least recently used model at max_loaded_models (lru)', async () => {
    const store = tempDir('mme-store-');
    fillStore(store, 4);
    t = await startTestServer('model_cache=on\nmax_loaded_models=3\neviction_policy=lru', { store });
    for (const name of ['m0', 'm1', 'm2']) assert.equal((await invoke(t, name, row)).status, 200);
    assert.equal((await invoke(t, 'm0', row)).status, 200); // m0 is now the most recent; m1 the least
    assertMlp(await invoke(t, 'm3', row), 3);
    const loaded = (await request(`${t.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName);
    assert.deepEqual(loaded, ['m0', 'm2', 'm3']);
    assert.equal(t.server.manager.events.stats.evictions, 1);
    assert.equal(workerPidsOf(process.pid).length, 3);
    assertMlp(await invoke(t, 'm1', row), 1); // reloaded on demand, evicting m2
    assert.deepEqual(
      (await request(`${t.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName),
      ['m0', 'm1', 'm3'],
    );
  });

  it('serves a burst of more distinct models than max_loaded_models, each answered correctly, none 507', async () => {
    const store = tempDir('mme-store-');
    fillStore(store, 6);
    // Four loads may run at once (max_concurrent_loads) and only two models may be loaded: each load
    // waits for the ones ahead of it and evicts them once their own requests are answered.
    t = await startTestServer('model_cache=on\nmax_loaded_models=2\nmax_concurrent_loads=4', { store });
    const seeds = [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5];
    const results = await Promise.all(seeds.map((seed) => invoke(t, `m${seed}`, row)));
    results.forEach((r, i) => assertMlp(r, seeds[i]));
    assert.ok(t.server.manager.registry.servingCount() <= 2);
    assert.ok(workerPidsOf(process.pid).length <= 2 + 1, 'two loaded, and at most one leaving');
  });

  it('lets in-flight requests finish while their model is evicted', async () => {
    const store = tempDir('mme-store-');
    writeModelDir(store, 'busy', addModel(), { 'handler.js': behaviourHandler });
    fillStore(store, 1);
    t = await startTestServer('model_cache=on\nmax_loaded_models=1', { store });
    const gate = path.join(tempDir('mme-gate-'), 'open');
    assert.equal((await invoke(t, 'busy', { echo: 'warm' })).status, 200);
    const model = t.server.manager.registry.get('busy');
    const held = invoke(t, 'busy', { barrier: gate, echo: 'held' });
    await waitFor(() => model.inFlightRequests === 1, 'the held request to run');
    const other = invoke(t, 'm0', row);
    await waitFor(
      () => t.server.manager.registry.current('busy')?.phase === 'draining',
      'busy to be chosen for eviction',
    );
    fs.writeFileSync(gate, '');
    const heldRes = await held;
    assert.equal(heldRes.status, 200, heldRes.text);
    assert.equal(heldRes.body.echo, 'held');
    assertMlp(await other, 0);
    assert.deepEqual(
      (await request(`${t.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName),
      ['m0'],
    );
  });

  it('does not reload a broken model on every request', async () => {
    const store = tempDir('mme-store-');
    writeModelDir(store, 'broken', Buffer.from('not onnx'));
    t = await startTestServer('model_cache=on\nload_failure_cache_seconds=600', { store });
    const first = await invoke(t, 'broken', row);
    assert.equal(first.status, 400);
    assert.equal(first.body.errorCode, 'MME_ERR_INVALID_MODEL');
    const again = await Promise.all(Array.from({ length: 5 }, () => invoke(t, 'broken', row)));
    for (const r of again) {
      assert.deepEqual({ ...r.body, message: '' }, { ...first.body, message: '' });
      const left = /^Model broken failed to load recently and is not retried for (\d+) more s/.exec(r.body.message);
      assert.ok(left && Number(left[1]) <= 600, r.body.message);
      assert.ok(r.body.message.endsWith(`The failure: ${first.body.message}`), r.body.message);
      assert.equal(r.headers.get('retry-after'), left[1]);
    }
    assert.equal(t.server.manager.events.stats.loadFailures, 1);
    assert.equal(t.server.manager.events.stats.loads, 0);
    const forget = await request(`${t.managementUrl}/models/broken`, { method: 'DELETE' });
    assert.equal(forget.status, 200, forget.text);
    assert.equal((await invoke(t, 'broken', row)).body.message, first.body.message, 'loaded again, failing afresh');
    assert.equal(t.server.manager.events.stats.loadFailures, 2);
  });

  it('does not remember a load that a SIGKILL ended: the next invoke loads the model again', async () => {
    const store = tempDir('mme-store-');
    // SIGKILLs its own process on the first load only (the marker file says it has), as the OOM killer would.
    const killedOnce = `const fs = require('node:fs');
const marker = require('node:path').join(__dirname, 'killed-once');
exports.initialize = () => { if (!fs.existsSync(marker)) { fs.writeFileSync(marker, ''); process.kill(process.pid, 'SIGKILL'); } };
exports.handle = async (requests) => requests.map(() => '{"ok":true}');
`;
    writeModelDir(store, 'victim', addModel(), { 'handler.js': killedOnce });
    t = await startTestServer('model_cache=on\nload_failure_cache_seconds=600', { store });
    const first = await invoke(t, 'victim', { echo: 1 });
    assert.equal(first.status, 507, first.text);
    const again = await invoke(t, 'victim', { echo: 2 });
    assert.equal(again.status, 200, "a failure of the instance is not the model's: it is tried again at once");
    assert.equal(t.server.manager.events.stats.loadFailures, 1);
  });

  it('answers 503 with Retry-After when a load outlasts load_wait_timeout, and the load goes on', async () => {
    const store = tempDir('mme-store-');
    writeModelDir(store, 'slow', addModel(), { 'handler.js': slowLoading });
    t = await startTestServer('model_cache=on\nload_wait_timeout=0.2', { store });
    const res = await invoke(t, 'slow', { echo: 1 });
    assert.equal(res.status, 503);
    assert.equal(res.body.errorCode, 'MME_ERR_MODEL_LOADING');
    assert.equal(res.headers.get('retry-after'), '1');
    await waitFor(() => t.server.manager.registry.servingCount() === 1, 'the load to finish in the background');
    assert.equal((await invoke(t, 'slow', { echo: 2 })).status, 200);
  });
});

describe('memory admission', () => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  it('answers 507 before starting any process when a model cannot fit (SageMaker mode: no eviction)', async () => {
    t = await startTestServer('model_cache=off\nmodel_memory_budget_mb=1');
    const dir = writeModelDir(t.store, 'm', mlpModel(spec(1)));
    const spawnedBefore = t.server.processes.spawned;
    const res = await loadModel(t, 'm', dir);
    assert.equal(res.status, 507);
    assert.equal(res.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
    assert.match(
      res.body.message,
      /does not fit: it needs about [\d.]+ MB and 0 MB of the 1 MB model memory budget is in use\. Unload a model/,
    );
    assert.equal(t.server.processes.spawned, spawnedBefore, 'a worker process was started');
  });

  it('answers 507 at max_loaded_models in SageMaker mode, and loads again after an unload', async () => {
    t = await startTestServer('model_cache=off\nmax_loaded_models=1');
    assert.equal((await loadModel(t, 'a', writeModelDir(t.store, 'a', mlpModel(spec(1))))).status, 200);
    const second = await loadModel(t, 'b', writeModelDir(t.store, 'b', mlpModel(spec(2))));
    assert.equal(second.status, 507);
    assert.equal(second.body.errorCode, 'MME_ERR_MODEL_LIMIT', 'a count limit is not a lack of memory');
    assert.match(second.body.message, /1 models are loaded and max_loaded_models is 1/);
    assert.equal((await request(`${t.url}/models/a`, { method: 'DELETE' })).status, 200);
    assert.equal((await loadModel(t, 'b', path.join(t.store, 'b'))).status, 200);
  });

  it('evicts to fit the memory budget when the cache is on, and reports memory per model', async () => {
    // Three workers of this model measure 85-100 MB of PSS together (shared pages split among them),
    // so 90 MB was a coin toss; 70 MB holds one or two, never three.
    t = await startTestServer('model_cache=on\nmodel_memory_budget_mb=70\neviction_policy=lru');
    for (const name of ['a', 'b', 'c']) {
      const res = await loadModel(t, name, writeModelDir(t.store, name, mlpModel(spec(3))));
      assert.equal(res.status, 200, res.text);
    }
    const manager = t.server.manager;
    assert.ok(manager.events.stats.evictions >= 1, 'no eviction although three workers exceed 70 MB');
    assert.ok(manager.registry.held('all').bytes <= manager.lifecycle.budgetBytes);
    const described = (await request(`${t.url}/models/c`)).body;
    assert.ok(described.memoryUsage > 10 * 2 ** 20);
    const listed = (await request(`${t.url}/models?memory=true`)).body.models;
    assert.ok(listed.every((m: { memoryUsage: number }) => m.memoryUsage > 10 * 2 ** 20));
  });
});
