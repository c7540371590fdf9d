/**
 * Issue 21 ("the boundary"), the server and worker lifecycle holes: one regression test per item
 * of its "Why", named after it, against real servers and real worker processes.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { behaviourHandler } from '../../harness/fault-handlers';
import { addModel, externalDataModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, type JsonResponse, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

const row = { inputs: { x: [Array(16).fill(1)] } };

/** A handler that runs only if the server follows a link to it: it leaves a file behind when loaded. */
const evidenceHandler = (marker: string) =>
  `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\nexports.handle = async (requests) => requests.map(() => '{}');\n`;

/** A handler that sets one response field wrong, as its request body says, and answers with its pid. */
const garbageHandler = `
exports.handle = async (requests, ctx) => requests.map((req, i) => {
  const cmd = JSON.parse(req.body.toString() || '{}');
  if (cmd.header !== undefined) ctx.setResponseHeader(i, 'x-count', cmd.header);
  if (cmd.contentType !== undefined) ctx.setResponseContentType(i, cmd.contentType);
  if (cmd.status !== undefined) ctx.setResponseStatus(i, cmd.status);
  return JSON.stringify({ pid: process.pid });
});
`;

describe('issue 21, the boundary: server and worker lifecycle holes', function () {
  this.timeout(120_000);
  let t: TestServer;
  afterEach(async () => t?.close());

  it('PUT /models/{name}?min_worker=12 under a 150 MB budget answers 507 naming the memory needed and in use, and starts no process', async () => {
    t = await startTestServer('worker_mode=dedicated\nmodel_cache=off\nmodel_memory_budget_mb=150');
    assert.equal((await loadModel(t, 'm', writeModelDir(t.store, 'm', mlpModel({ sizes: [4, 8, 3] })))).status, 200);
    const pids = workerPidsOf(process.pid);
    const spawned = t.server.processes.spawned;
    for (const query of ['min_worker=12', 'min_worker=12&max_worker=12&synchronous=true']) {
      const res = await request(`${t.managementUrl}/models/m?${query}`, { method: 'PUT' });
      assert.equal(res.status, 507, `${query}: ${res.text}`);
      assert.equal(res.body.errorCode, 'MME_ERR_INSUFFICIENT_MEMORY');
      assert.match(
        res.body.message,
        /Model m cannot scale to 12 workers: the new workers need about [\d.]+ MB and [\d.]+ MB of the 150 MB model memory budget is in use\. Its workers are unchanged/,
      );
    }
    assert.equal(t.server.processes.spawned, spawned, 'a refused scale starts no process');
    assert.deepEqual(workerPidsOf(process.pid), pids);
    const d = (await request(`${t.managementUrl}/models/m`)).body;
    assert.equal(d.minWorkers, 1, 'the old scale is kept');
    assert.equal(d.workers.length, 1);
    assert.ok(
      t.server.manager.registry.held('all').bytes <= t.server.manager.lifecycle.budgetBytes,
      'no reservation is left behind',
    );
    assert.equal((await invoke(t, 'm', { inputs: { input: [[1, 2, 3, 4]] } })).status, 200);
  });

  it('a handler reached through a symbolic link out of the model directory, named in the load request or in model-config.json, is refused with 400 and never runs; a handler must be a path inside the model directory', async () => {
    t = await startTestServer('worker_mode=dedicated\nmodel_cache=off');
    const outside = tempDir('mme-outside-');
    const marker = path.join(outside, 'ran');
    fs.writeFileSync(path.join(outside, 'evil.js'), evidenceHandler(marker));
    const dir = (name: string, extra: Record<string, string> = {}) => {
      const d = writeModelDir(t.store, name, addModel(), extra);
      fs.symlinkSync(path.join(outside, 'evil.js'), path.join(d, 'link.js'));
      fs.symlinkSync(outside, path.join(d, 'lib'));
      return d;
    };
    const spawned = t.server.processes.spawned;
    const refusals: Array<[string, JsonResponse]> = [
      [
        'model-config.json: link.js',
        await loadModel(t, 'c1', dir('c1', { 'model-config.json': '{"handler": "link.js"}' })),
      ],
      [
        'model-config.json: lib/evil.js',
        await loadModel(t, 'c2', dir('c2', { 'model-config.json': '{"handler": "lib/evil.js"}' })),
      ],
      ['load request: link.js', await loadModel(t, 'r1', dir('r1'), { handler: 'link.js' })],
      ['load request: lib/evil.js', await loadModel(t, 'r2', dir('r2'), { handler: 'lib/evil.js' })],
    ];
    for (const [what, res] of refusals) {
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.equal(res.body.errorCode, 'MME_ERR_INVALID_MODEL', what);
      assert.match(res.body.message, /(link\.js|lib) in .* is a symbolic link; links are not followed/, what);
    }
    for (const handler of ['../evil.js', '/etc/passwd', 'a/../../evil.js']) {
      const res = await loadModel(t, 'r3', dir(`r3-${refusals.length}-${handler.length}`), { handler });
      assert.equal(res.status, 400, `${handler}: ${res.text}`);
      assert.match(res.body.message, /must be a relative path inside the model directory/);
    }
    const missing = await loadModel(t, 'r4', writeModelDir(t.store, 'r4', addModel()), { handler: 'nope.js' });
    assert.equal(missing.status, 400, missing.text);
    assert.match(missing.body.message, /handler "nope\.js" named in the load request does not exist/);
    assert.ok(!fs.existsSync(marker), 'the linked handler never ran');
    assert.equal(t.server.processes.spawned, spawned, 'no worker was started for a refused handler');
    assert.equal(t.server.manager.registry.servingCount(), 0);
    // The rule is about links, not about the parameter: a real file inside the directory still loads.
    const ok = await loadModel(
      t,
      'fine',
      writeModelDir(t.store, 'fine', addModel(), {
        'code/h.js': 'exports.handle = async (r) => r.map(() => \'{"h":1}\');\n',
      }),
      { handler: 'code/h.js' },
    );
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual((await invoke(t, 'fine', row)).body, { h: 1 });
  });

  it('an invoke-time error names a file of the model by the url the client sent, never the server path', async () => {
    t = await startTestServer('worker_mode=dedicated\nmodel_cache=off');
    const reader = `const fs = require('node:fs');
const path = require('node:path');
let dir;
exports.initialize = (ctx) => { dir = ctx.modelDir; };
exports.handle = async (requests) => requests.map(() => fs.readFileSync(path.join(dir, 'labels.json')));
`;
    const src = writeModelDir(tempDir(), 'reader', addModel(), { 'handler.js': reader });
    await tar.c({ gzip: true, file: path.join(t.store, 'reader.tar.gz'), cwd: src }, fs.readdirSync(src));
    writeModelDir(t.store, 'reader-dir', addModel(), { 'handler.js': reader });
    const serverPaths = [t.store, fs.realpathSync(t.store), t.server.cacheDir, os.tmpdir()];
    for (const [name, url] of [
      ['from-archive', 'reader.tar.gz'],
      ['from-dir', 'reader-dir'],
    ]) {
      const load = await loadModel(t, name, url);
      assert.equal(load.status, 200, load.text);
      const res = await invoke(t, name, row);
      assert.equal(res.status, 500, res.text);
      assert.match(res.body.message, new RegExp(`ENOENT.*"${url.replace('.', '\\.')}"/labels\\.json`), url);
      for (const p of serverPaths)
        assert.ok(!res.text.includes(p), `${url}: the error shows the server path ${p}: ${res.text}`);
    }
  });

  it("management errors quote the client's input in at most ~100 characters and never show a server path (model_store, cache, tmp, install)", async () => {
    t = await startTestServer('worker_mode=dedicated\nmodel_cache=off');
    const store = t.store;
    fs.mkdirSync(path.join(store, 'empty'));
    writeModelDir(store, 'garbage', Buffer.from('not an onnx model at all'));
    writeModelDir(store, 'badconfig', addModel(), { 'model-config.json': `{"${'k'.repeat(5000)}": 1}` });
    writeModelDir(store, 'noweights', externalDataModel('w.bin'));
    writeModelDir(store, 'badrequire', addModel(), {
      'handler.js': "exports.initialize = (ctx) => require(ctx.modelDir + '/nope');\n",
    });
    const long = `x${'y'.repeat(5000)}`;
    const cases: Array<[string, () => Promise<JsonResponse>, number, RegExp]> = [
      [
        'a missing relative url',
        () => loadModel(t, 'e1', 'elsewhere'),
        404,
        /^Model not found in model store: "elsewhere"$/,
      ],
      ['a directory without a model', () => loadModel(t, 'e2', 'empty'), 400, /"empty" must hold a \.onnx file/],
      ['a file onnxruntime cannot load', () => loadModel(t, 'e3', 'garbage'), 400, /model\.onnx/],
      [
        'a bad model-config.json key',
        () => loadModel(t, 'e4', 'badconfig'),
        400,
        /unknown field "kkk.*… \(5000 characters\)/,
      ],
      [
        'external data that is missing (onnxruntime names the file)',
        () => loadModel(t, 'e4b', 'noweights'),
        400,
        /"noweights"\/w\.bin/,
      ],
      [
        'a handler whose initialize fails a require (Node appends a require stack)',
        () => loadModel(t, 'e4c', 'badrequire'),
        400,
        /Cannot find module '"badrequire"\/nope'$/,
      ],
      ['a 5000-character url', () => loadModel(t, 'e5', long), 404, /"xyyy.*… \(5001 characters\)$/],
      ['a 5000-character remote url', () => loadModel(t, 'e6', `s3://${long}`), 400, /… \(5006 characters\)$/],
      [
        'a 5000-character parameter',
        () => loadModel(t, 'e7', 'garbage', { batch_size: long }),
        400,
        /batch_size must be an integer >= 1; got "xyyy.*… \(5001 characters\)/,
      ],
      [
        'a 5000-character name to scale',
        () => request(`${t.managementUrl}/models/${long}?min_worker=1`, { method: 'PUT' }),
        404,
        /^Model not found: "xyyy.*… \(5001 characters\)$/,
      ],
      [
        'a 5000-character name to unload',
        () => request(`${t.managementUrl}/models/${long}`, { method: 'DELETE' }),
        404,
        /^Model not found: "xyyy.*… \(5001 characters\)$/,
      ],
      [
        'a 5000-character name to describe',
        () => request(`${t.managementUrl}/models/${long}`),
        404,
        /^Model not found: "xyyy.*… \(5001 characters\)$/,
      ],
    ];
    const serverPaths = [
      store,
      fs.realpathSync(store),
      t.server.cacheDir,
      os.tmpdir(),
      path.resolve(__dirname, '..', '..', '..'),
    ];
    for (const [what, send, status, message] of cases) {
      const res = await send();
      assert.equal(res.status, status, `${what}: ${res.text}`);
      assert.match(res.body.message, message, what);
      assert.ok(res.text.length < 1000, `${what}: a ${res.text.length}-character error body`);
      for (const p of serverPaths) assert.ok(!res.text.includes(p), `${what} shows the server path ${p}: ${res.text}`);
    }
  });

  it('a request whose client left while it waited for an on-demand load never reaches the worker; the next request runs', async () => {
    t = await startTestServer(
      'worker_mode=dedicated\nmodel_cache=on\nunregister_model_timeout=5\ndefault_response_timeout_seconds=600',
    );
    const dir = tempDir();
    const go = path.join(dir, 'go');
    const loading = path.join(dir, 'loading');
    // Loads only once the test says so, and leaves a file per request it runs.
    writeModelDir(t.store, 'slow', addModel(), {
      'handler.js': `const fs = require('node:fs');
exports.initialize = () => { fs.writeFileSync(${JSON.stringify(loading)}, ''); while (!fs.existsSync(${JSON.stringify(go)})) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5); };
exports.handle = async (requests) => requests.map((r) => { fs.writeFileSync(JSON.parse(r.body.toString()).touch, ''); return '{}'; });
`,
    });
    const listener = t.server.listeners[0].server;
    const closed = new Promise<void>((resolve) =>
      listener.once('request', (_req, res) => res.once('close', () => resolve())),
    );
    const client = new AbortController();
    const left = fetch(`${t.url}/models/slow/invoke`, {
      method: 'POST',
      body: JSON.stringify({ touch: path.join(dir, 'cancelled') }),
      headers: { 'content-type': 'application/json' },
      signal: client.signal,
    });
    left.catch(() => undefined);
    await waitFor(() => fs.existsSync(loading), 'the on-demand load to start');
    client.abort();
    await closed;
    fs.writeFileSync(go, '');
    const after = await invoke(t, 'slow', { touch: path.join(dir, 'after') });
    assert.equal(after.status, 200, after.text);
    assert.ok(fs.existsSync(path.join(dir, 'after')));
    assert.ok(!fs.existsSync(path.join(dir, 'cancelled')), 'the request of the client that left reached the worker');
    // Nothing holds the model: an unload finds no request to wait for (before, the dropped request held it until the response timeout).
    const unload = await request(`${t.managementUrl}/models/slow`, { method: 'DELETE' });
    assert.equal(unload.status, 200, unload.text);
  });

  it('a custom handler that sets a bad header value, content type or status gets 500 MME_ERR_MODEL_ERROR naming it, nothing of it reaches the client, and its worker serves on', async () => {
    t = await startTestServer('worker_mode=dedicated\nmodel_cache=off');
    assert.equal(
      (await loadModel(t, 'g', writeModelDir(t.store, 'g', addModel(), { 'handler.js': garbageHandler }))).status,
      200,
    );
    const [pid] = workerPidsOf(process.pid);
    const cases: Array<[unknown, RegExp]> = [
      [{ header: 42 }, /response header "x-count" to 42: a header value must be a string/],
      [
        { header: 'a\r\nSet-Cookie: b=1' },
        /response header "x-count" to "a\\r\\nSet-Cookie: b=1": .*no control characters/,
      ],
      [{ header: 'x'.repeat(200_000) }, /response header "x-count" to "x{100}"… \(200000 characters\)/],
      [{ contentType: { type: 'json' } }, /content type to an object: it must be a string/],
      [{ contentType: 'text/plain\n' }, /content type to "text\/plain\\n"/],
      [{ status: 70000 }, /status 70000: it must be an integer from 200 to 599/],
      [{ status: '200' }, /status "200": it must be an integer from 200 to 599/],
      [{ status: 99 }, /status 99/],
    ];
    for (const [cmd, message] of cases) {
      const res = await invoke(t, 'g', cmd);
      assert.equal(res.status, 500, `${JSON.stringify(cmd).slice(0, 80)}: ${res.text.slice(0, 300)}`);
      assert.equal(res.body.errorCode, 'MME_ERR_MODEL_ERROR');
      assert.match(res.body.message, /^the handler set /);
      assert.match(res.body.message, message);
      assert.equal(res.headers.get('x-count'), null, 'nothing of the faulty head reaches the client');
    }
    const ok = await invoke(t, 'g', { header: '7', status: 201 });
    assert.equal(ok.status, 201);
    assert.equal(ok.headers.get('x-count'), '7');
    assert.equal(ok.body.pid, pid, 'the same worker serves on');
    assert.deepEqual(workerPidsOf(process.pid), [pid]);
  });

  it('a model loading in a shared host when another model crashes that host loads again in a new host (200) while the crashing batch fails with 500; a load that crashes the host itself fails', async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    assert.equal(
      (await loadModel(t, 'crasher', writeModelDir(t.store, 'crasher', addModel(), { 'handler.js': behaviourHandler })))
        .status,
      200,
    );
    const [hostPid] = workerPidsOf(process.pid);
    const dir = tempDir();
    const go = path.join(dir, 'go');
    // Loads without blocking the host (batches of other models run meanwhile), once the test says so; records the host it loads in.
    const waiting = `const fs = require('node:fs');
exports.initialize = async () => {
  fs.writeFileSync(${JSON.stringify(dir)} + '/loading-' + process.pid, '');
  while (!fs.existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 5));
};
exports.handle = async (requests) => requests.map(() => JSON.stringify({ pid: process.pid }));
`;
    const loading = loadModel(
      t,
      'bystander',
      writeModelDir(t.store, 'bystander', addModel(), { 'handler.js': waiting }),
    );
    await waitFor(() => fs.existsSync(path.join(dir, `loading-${hostPid}`)), 'the load to be under way in the host');
    const crashed = await invoke(t, 'crasher', { exit: 3 });
    assert.equal(crashed.status, 500, crashed.text);
    assert.equal(
      crashed.body.errorCode,
      'MME_ERR_WORKER_DIED',
      'the running batch fails, as a crash of the host is its doing',
    );
    const failed = loading.then((r) => {
      throw new Error(`the load ended with ${r.status} instead of starting again in another host: ${r.text}`);
    });
    failed.catch(() => undefined);
    await Promise.race([
      failed,
      waitFor(
        () => fs.readdirSync(dir).some((f) => f.startsWith('loading-') && f !== `loading-${hostPid}`),
        'the load to start again in the new host',
      ),
    ]);
    fs.writeFileSync(go, '');
    const loaded = await loading;
    assert.equal(loaded.status, 200, loaded.text);
    const d = (await request(`${t.managementUrl}/models/bystander`)).body;
    assert.notEqual(d.workers[0].pid, hostPid);
    const res = await invoke(t, 'bystander', {});
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.pid, d.workers[0].pid);
    assert.ok(
      t.logs.some((l) =>
        /\[bystander\] its shared host died while it loaded, through no fault of this model \(.*\); loading it in another host/.test(
          l,
        ),
      ),
    );
    // A load that crashes the host itself is that load's failure: it is not tried in another host.
    const suicidal = await loadModel(
      t,
      'suicidal',
      writeModelDir(t.store, 'suicidal', addModel(), { 'handler.js': 'exports.initialize = () => process.exit(5);\n' }),
    );
    assert.equal(suicidal.status, 500, suicidal.text);
    assert.equal(suicidal.body.errorCode, 'MME_ERR_LOAD_FAILED');
    await waitFor(
      async () => (await invoke(t, 'bystander', {})).status === 200,
      'the bystander to be served again after the second crash',
      60_000,
    );
  });
});
