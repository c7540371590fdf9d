import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as tar from 'tar';
import path from 'node:path';
import {
  allocationFailure,
  exitsWhileLoading,
  hangsWhileLoading,
  killedWhileLoading,
} from '../../harness/fault-handlers';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { isAlive, workerPidsOf } from '../../harness/process-probes';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

describe('POST /models and DELETE /models/{name}', () => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer();
  });
  afterEach(async () => {
    await t.close();
  });

  it('loads a model directory and answers 200 {"status":"Workers scaled"} once the worker is ready', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    const res = await loadModel(t, 'add', dir);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'Workers scaled' });
    const described = await request(`${t.url}/models/add`);
    assert.equal(described.body.workers.length, 1);
    assert.equal(described.body.workers[0].status, 'READY');
  });

  it('accepts the MMS query-string form', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    const res = await request(
      `${t.url}/models?url=${encodeURIComponent(dir)}&model_name=q&initial_workers=1&synchronous=true`,
      { method: 'POST' },
    );
    assert.equal(res.status, 200);
    assert.equal((await request(`${t.url}/models/q`)).status, 200);
  });

  it('answers 409 for a name that is already loaded', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    assert.equal((await loadModel(t, 'add', dir)).status, 200);
    const again = await loadModel(t, 'add', dir);
    assert.equal(again.status, 409);
    assert.equal(again.body.type, 'ConflictStatusException');
    assert.equal(again.body.code, 409);
    assert.match(again.body.message, /already registered/);
  });

  it('T-L2 concurrent_duplicate_load: gives one 200 and 19 × 409 for 20 concurrent loads of one name, and starts one worker', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    const results = await Promise.all(Array.from({ length: 20 }, () => loadModel(t, 'same', dir)));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, ...Array(19).fill(409)]);
    assert.equal(workerPidsOf(process.pid).length, 1);
  });

  it("answers 404 with MMS's message when the url does not exist", async () => {
    const res = await loadModel(t, 'nope', path.join(t.store, 'does-not-exist'));
    assert.equal(res.status, 404);
    assert.equal(res.body.type, 'ModelNotFoundException');
    assert.match(res.body.message, /Model not found in model store/);
  });

  it('answers 400 for a missing url, a missing or bad name, and a directory without a .onnx file', async () => {
    const noUrl = await request(`${t.url}/models`, { method: 'POST', json: { model_name: 'x' } });
    assert.equal(noUrl.status, 400);
    assert.match(noUrl.body.message, /url is required/);
    const badName = await loadModel(t, '../etc', writeModelDir(t.store, 'ok', addModel()));
    assert.equal(badName.status, 400);
    assert.match(badName.body.message, /model_name/);
    const empty = path.join(t.store, 'empty');
    fs.mkdirSync(empty);
    const noOnnx = await loadModel(t, 'empty', empty);
    assert.equal(noOnnx.status, 400);
    assert.match(noOnnx.body.message, /\.onnx/);
    const badJson = await request(`${t.url}/models`, {
      method: 'POST',
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(badJson.status, 400);
  });

  it('answers 400 MME_ERR_UNKNOWN_FIELD for a body field a load does not know, with a did-you-mean and the known fields, and loads nothing', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    const res = await loadModel(t, 'a', dir, { initial_worker: 2, pinnned: true });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_UNKNOWN_FIELD');
    assert.equal(
      res.body.message,
      'Unknown fields in the load request: "initial_worker" (did you mean initial_workers?), "pinnned" (did you mean pinned?). The fields are model_name, url, handler, batch_size, max_batch_delay, initial_workers, response_timeout, load_timeout, job_queue_size, use_job_ticket, preload_model, device_ids, worker_mode, synchronous, memory_limit_mb, cpu_limit, pinned, eviction_priority, idle_unload_seconds.',
    );
    assert.equal((await request(`${t.url}/models/a`)).status, 404);
    assert.equal(workerPidsOf(process.pid).length, 0);
  });

  it('answers 400 for memory_limit_mb under a warm worker or cpu_limit past the cores, in the body or the query string, and loads nothing', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    const under = await loadModel(t, 'a', dir, { memory_limit_mb: 32 });
    assert.equal(under.status, 400, under.text);
    assert.equal(under.body.message, 'memory_limit_mb must be an integer >= 64; got 32.');
    const past = await request(`${t.url}/models?model_name=a&url=${encodeURIComponent(dir)}&cpu_limit=4096`, {
      method: 'POST',
    });
    assert.equal(past.status, 400, past.text);
    assert.match(
      past.body.message,
      /^cpu_limit must be a number of cores >= 0\.01 and <= \d+ \(this machine's cores\); got "4096"\.$/,
    );
    assert.equal((await loadModel(t, 'a', dir, { cpu_limit: 'half' })).status, 400);
    assert.equal((await request(`${t.url}/models/a`)).status, 404);
  });

  it('answers 400 for a duration longer than a timer can wait, in the body or the query string, and loads at the longest one', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    for (const [key, value] of [
      ['load_timeout', 2_200_000],
      ['response_timeout', 2_147_484],
      ['max_batch_delay', 2 ** 31],
    ] as const) {
      const res = await loadModel(t, 'add', dir, { [key]: value });
      assert.equal(res.status, 400, `${key}: ${res.text}`);
      assert.match(
        res.body.message,
        new RegExp(
          `^${key} must be an integer >= [01] and <= \\d+ (seconds|ms) \\(about 24\\.8 days, the longest a timer can wait\\); got ${value}\\.$`,
        ),
      );
      const query = await request(`${t.url}/models?model_name=add&url=${encodeURIComponent(dir)}&${key}=${value}`, {
        method: 'POST',
      });
      assert.equal(query.status, 400, `${key} in the query: ${query.text}`);
    }
    const longest = await loadModel(t, 'add', dir, {
      load_timeout: 2_147_483,
      response_timeout: 2_147_483,
      max_batch_delay: 2 ** 31 - 1,
    });
    assert.equal(longest.status, 200, longest.text);
    const answer = await request(`${t.url}/models/add/invoke`, {
      method: 'POST',
      json: { inputs: { x: [Array(16).fill(1)] } },
    });
    assert.equal(answer.status, 200, `the longest deadline does not expire at once: ${answer.text}`);
  });

  it('answers 507 when the worker is SIGKILLed while loading, and leaves nothing behind', async () => {
    const dir = writeModelDir(t.store, 'oom', addModel(), { 'handler.js': killedWhileLoading });
    const res = await loadModel(t, 'oom', dir);
    assert.equal(res.status, 507);
    assert.equal(res.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
    assert.equal((await request(`${t.url}/models/oom`)).status, 404);
    assert.deepEqual(workerPidsOf(process.pid), []);
    assert.equal(
      (await loadModel(t, 'oom', writeModelDir(t.store, 'fine', addModel()))).status,
      200,
      'the name is free again',
    );
  });

  it('answers 507 when loading fails to allocate memory', async () => {
    const dir = writeModelDir(t.store, 'alloc', addModel(), { 'handler.js': allocationFailure });
    const res = await loadModel(t, 'alloc', dir);
    assert.equal(res.status, 507);
    assert.match(res.body.message, /memory/);
    assert.deepEqual(workerPidsOf(process.pid), []);
  });

  it('answers 500 with the reason when a worker exits while loading, and leaves nothing behind', async () => {
    const dir = writeModelDir(t.store, 'exits', addModel(), { 'handler.js': exitsWhileLoading });
    const res = await loadModel(t, 'exits', dir);
    assert.equal(res.status, 500);
    assert.match(res.body.message, /exited with code 3 while loading/);
    assert.deepEqual((await request(`${t.url}/models`)).body, { models: [] });
    assert.deepEqual(workerPidsOf(process.pid), []);
  });

  it('turns a load that hangs past load_timeout into a clean failure', async () => {
    const dir = writeModelDir(t.store, 'hang', addModel(), { 'handler.js': hangsWhileLoading });
    const res = await loadModel(t, 'hang', dir, { load_timeout: 1 });
    assert.equal(res.status, 500);
    assert.equal(res.body.errorCode, 'MME_ERR_LOAD_TIMEOUT');
    assert.match(res.body.message, /did not finish loading within 1 s/);
    assert.deepEqual(workerPidsOf(process.pid), []);
    assert.equal((await request(`${t.url}/models/hang`)).status, 404);
  });

  it('loads a local .tar.gz artifact and removes its extracted copy on unload', async () => {
    writeModelDir(t.store, 'packed', addModel());
    const archive = path.join(t.store, 'packed.tar.gz');
    await tar.c({ gzip: true, file: archive, cwd: path.join(t.store, 'packed') }, ['model.onnx']);
    const res = await loadModel(t, 'packed', archive);
    assert.equal(res.status, 200, res.text);
    const inv = await request(`${t.url}/models/packed/invoke`, {
      method: 'POST',
      json: { inputs: { x: [Array(16).fill(1)] } },
    });
    assert.deepEqual(inv.body.outputs.y, [Array(16).fill(2)]);
    assert.equal(fs.readdirSync(t.server.cacheDir).length, 1, 'one extraction directory while loaded');
    assert.equal((await request(`${t.url}/models/packed`, { method: 'DELETE' })).status, 200);
    assert.deepEqual(fs.readdirSync(t.server.cacheDir), []);
  });

  it('answers 400 for a corrupt .onnx file and starts nothing that stays', async () => {
    const dir = writeModelDir(t.store, 'corrupt', Buffer.from('not an onnx model'));
    const res = await loadModel(t, 'corrupt', dir);
    assert.equal(res.status, 400);
    assert.equal(res.body.errorCode, 'MME_ERR_INVALID_MODEL');
    assert.match(
      res.body.message,
      /onnxruntime could not read model\.onnx \(Protobuf parsing failed\.?\): check that it is whole \(17 bytes here: a truncated download or copy fails like this\), that it is not a Git LFS pointer, and that it is an ONNX model/,
    );
    assert.doesNotMatch(res.body.message, new RegExp(t.store), 'no server path');
    const pointer = 'version https://git-lfs.github.com/spec/v1\noid sha256:0123\nsize 1234\n';
    const lfs = await loadModel(t, 'lfs', writeModelDir(t.store, 'lfs', Buffer.from(pointer)));
    assert.equal(lfs.status, 400);
    assert.match(
      lfs.body.message,
      /model\.onnx .*: it is a Git LFS pointer \(\d+ bytes\), not the model: fetch the file itself \(git lfs pull\)/,
    );
    assert.deepEqual(workerPidsOf(process.pid), []);
  });

  it('unloads only after every worker process has exited', async () => {
    const dir = writeModelDir(t.store, 'mlp', mlpModel({ sizes: [4, 8, 3] }));
    assert.equal((await loadModel(t, 'mlp', dir, { initial_workers: 2 })).status, 200);
    const pids = (await request(`${t.url}/models/mlp`)).body.workers.map((w: { pid: number }) => w.pid);
    assert.equal(pids.length, 2);
    assert.ok(pids.every(isAlive));
    const res = await request(`${t.url}/models/mlp`, { method: 'DELETE' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'Model "mlp" unregistered' });
    assert.ok(
      pids.every((p: number) => !isAlive(p)),
      'worker processes still alive after DELETE returned',
    );
    assert.equal((await request(`${t.url}/models/mlp`)).status, 404);
  });

  it('answers 404 to unloading an unknown model', async () => {
    const res = await request(`${t.url}/models/ghost`, { method: 'DELETE' });
    assert.equal(res.status, 404);
    assert.equal(res.body.type, 'ModelNotFoundException');
  });

  it('can load a model again after unloading it (SageMaker reuses the url)', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    for (let i = 0; i < 3; i++) {
      assert.equal((await loadModel(t, 'add', dir)).status, 200);
      assert.equal((await request(`${t.url}/models/add`, { method: 'DELETE' })).status, 200);
    }
  });
});
