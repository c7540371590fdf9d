/**
 * reliability-security.md §6 C, the MME contract and lifecycle (T-L1 … T-L5). T-L2 is proven by
 * test/http/load-unload.test.ts (see README.md here); the soak's full length is `npm run soak`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runLeakSoak } from '../../scripts/hardening/leak-soak';
import { tgz } from '../../harness/tar-archives';
import { behaviourHandler } from '../../harness/fault-handlers';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { startCliServer } from '../../harness/cli-server';
import { descendantsOf, isAlive, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

const row = { inputs: { x: [Array(16).fill(1)] } };

describe('hardening: MME contract and lifecycle', () => {
  describe('in SageMaker mode (no self-managed cache: the platform decides what is loaded)', () => {
    let t: TestServer;
    afterEach(async () => {
      await t.close();
    });

    it('T-L1 mme_contract_codes: load, load again, list, get, invoke, unload, unload again, invoke, get', async () => {
      t = await startTestServer('model_cache=off');
      const url = path.join(writeModelDir(t.store, 'tenant-a', addModel()));
      const name = 'a1b2c3';
      const steps: Array<[string, () => Promise<{ status: number; body: any }>, number]> = [
        // eslint-disable-line @typescript-eslint/no-explicit-any
        ['load', () => loadModel(t, name, url), 200],
        ['load again', () => loadModel(t, name, url), 409],
        ['list', () => request(`${t.url}/models`), 200],
        ['get', () => request(`${t.url}/models/${name}`), 200],
        ['invoke', () => invoke(t, name, row), 200],
        ['unload', () => request(`${t.url}/models/${name}`, { method: 'DELETE' }), 200],
        ['unload again', () => request(`${t.url}/models/${name}`, { method: 'DELETE' }), 404],
        ['invoke', () => invoke(t, name, row), 404],
        ['get', () => request(`${t.url}/models/${name}`), 404],
      ];
      const bodies = [];
      for (const [what, step, status] of steps) {
        const res = await step();
        assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
        bodies.push(res.body);
      }
      assert.deepEqual(bodies[2], { models: [{ modelName: name, modelUrl: url }] });
      assert.equal(bodies[3].modelName, name);
      assert.equal(bodies[1].type, 'ConflictStatusException');
      for (const i of [6, 7, 8]) assert.equal(bodies[i].type, 'ModelNotFoundException');
    });

    it('T-L3 insufficient_memory_507: a load that does not fit the budget is 507 with nothing registered or started, and loads once another model is unloaded', async () => {
      // 64 MB of weights each: one worker measures about 117 MB and the next is estimated alike, so a
      // 150 MB budget holds one model, never two, however the shared pages of the moment split.
      t = await startTestServer('model_cache=off\nmodel_memory_budget_mb=150');
      const weights = mlpModel({ sizes: [1024, 8192, 1024], seed: 1 });
      assert.equal((await loadModel(t, 'first', writeModelDir(t.store, 'first', weights))).status, 200);
      const second = writeModelDir(t.store, 'second', weights);
      const spawned = t.server.processes.spawned;
      const refused = await loadModel(t, 'second', second);
      assert.equal(refused.status, 507, refused.text);
      assert.equal(refused.body.type, 'InsufficientMemoryException');
      assert.equal(refused.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
      assert.equal(t.server.processes.spawned, spawned, 'a worker process was started');
      assert.deepEqual(
        (await request(`${t.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName),
        ['first'],
      );
      assert.equal((await request(`${t.url}/models/second`)).status, 404);
      assert.equal(workerPidsOf(process.pid).length, 1);
      assert.equal((await request(`${t.url}/models/first`, { method: 'DELETE' })).status, 200);
      const retried = await loadModel(t, 'second', second);
      assert.equal(retried.status, 200, retried.text);
    });
  });

  it('T-L4 unload_under_load: DELETE during 32 concurrent invokes answers 200; every request settles as 200, 503 or 404; the worker and extracted files are gone (the memory given back: npm run soak)', async () => {
    const store = tempDir('mme-store-');
    const tmp = tempDir('mme-tmp-');
    const archive = path.join(store, 'a.tar.gz');
    fs.writeFileSync(
      archive,
      tgz([
        { path: 'model.onnx', data: addModel() },
        { path: 'handler.js', data: behaviourHandler },
      ]),
    );
    // SageMaker mode: an invoke that reaches the server after the unload is a 404, where the
    // self-managed cache would load the archive again by its name in the store.
    const s = await startCliServer('model_cache=off', { store, env: { TMPDIR: tmp } });
    try {
      assert.equal((await loadModel(s, 'a', archive)).status, 200);
      const [worker] = descendantsOf(s.pid);
      const extracted = () =>
        fs
          .readdirSync(tmp)
          .filter((d) => d.startsWith('mme-artifacts-'))
          .flatMap((d) => fs.readdirSync(path.join(tmp, d)));
      assert.equal(extracted().length, 1);
      let answered = 0;
      const inFlight = Array.from({ length: 32 }, () =>
        invoke(s, 'a', { sleepMs: 50 }).then((r) => {
          answered++;
          return r;
        }),
      );
      while (answered === 0) await Promise.race(inFlight);
      // No time bound: under load on a shared machine the unload has only to answer and leave nothing running.
      const unload = await request(`${s.url}/models/a`, { method: 'DELETE' });
      assert.equal(unload.status, 200, unload.text);
      const settled = await Promise.all(inFlight);
      for (const r of settled)
        assert.ok([200, 503, 404].includes(r.status), `an in-flight request got ${r.status}: ${r.text}`);
      assert.ok(!isAlive(worker), 'the worker process is still running');
      assert.deepEqual(descendantsOf(s.pid), []);
      assert.deepEqual(extracted(), []);
    } finally {
      await s.stop();
    }
  });

  it('T-L5 load_unload_soak_leak: 30 load → 10 invokes → unload cycles and 5 distinct models leave no process, zombie, orphan, file descriptor or extraction directory behind (RSS growth and its leaking control: npm run soak)', async () => {
    const soak = await runLeakSoak({ cycles: 30, distinctModels: 5, rssGrowthLimit: null });
    assert.deepEqual(soak.problems, []);
    assert.equal(soak.samples.length, 35, 'a footprint after every cycle');
  });
});
