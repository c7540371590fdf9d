/**
 * preload_model=true in Node's terms: one process holds the session (weights in memory once) and
 * runs up to default_workers_per_model batches at a time.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../harness/fault-handlers';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

describe('preload_model', () => {
  let t: TestServer;
  // ~8 MB of weights, so one copy versus three is visible in PSS.
  const weights = mlpModel({ sizes: [256, 4096, 256] });

  beforeEach(async () => {
    t = await startTestServer();
  });
  afterEach(async () => {
    await t.close();
  });

  it('runs one process with N concurrent slots instead of N processes', async () => {
    const dir = writeModelDir(t.store, 'pre', weights, { 'handler.js': behaviourHandler });
    assert.equal((await loadModel(t, 'pre', dir, { preload_model: true, initial_workers: 3 })).status, 200);
    assert.equal(workerPidsOf(process.pid).length, 1);
    const described = (await request(`${t.url}/models/pre`)).body;
    assert.equal(described.preloadModel, true);
    assert.equal(described.workers.length, 1);
    assert.equal(described.workers[0].concurrency, 3);

    const gate = path.join(tempDir('mme-gate-'), 'open');
    const model = t.server.manager.registry.get('pre');
    const calls = Array.from({ length: 4 }, (_, i) => invoke(t, 'pre', { awaitFile: gate, echo: i }));
    await waitFor(
      () => model.inFlightRequests === 3 && model.queueLength === 1,
      'three requests running at once and one queued',
    );
    fs.writeFileSync(gate, '');
    const results = await Promise.all(calls);
    assert.deepEqual(
      results.map((r) => r.status),
      [200, 200, 200, 200],
    );
    assert.equal(new Set(results.map((r) => r.body.pid)).size, 1);
  });

  it('holds the weights once: less memory than three separate workers', async () => {
    const on = writeModelDir(t.store, 'on', weights);
    const off = writeModelDir(t.store, 'off', weights);
    assert.equal((await loadModel(t, 'on', on, { preload_model: true, initial_workers: 3 })).status, 200);
    assert.equal((await loadModel(t, 'off', off, { preload_model: false, initial_workers: 3 })).status, 200);
    const memOn = (await request(`${t.url}/models/on`)).body.memoryUsage;
    const memOff = (await request(`${t.url}/models/off`)).body.memoryUsage;
    assert.ok(memOn > 0 && memOff > 0);
    assert.ok(memOn * 2 < memOff, `preload ${memOn} B vs separate ${memOff} B`);
  });

  it('scales a preloaded model by slots, not processes', async () => {
    const dir = writeModelDir(t.store, 'pre', weights);
    assert.equal((await loadModel(t, 'pre', dir, { preload_model: true, initial_workers: 2 })).status, 200);
    const [pid] = workerPidsOf(process.pid);
    assert.equal((await request(`${t.url}/models/pre?min_worker=5&synchronous=true`, { method: 'PUT' })).status, 200);
    assert.deepEqual(workerPidsOf(process.pid), [pid]);
    assert.equal((await request(`${t.url}/models/pre`)).body.workers[0].concurrency, 5);
  });
});
