/**
 * worker_mode=shared against real host processes: many models per process, each with its own
 * weights; crashes, eviction, 507 and recycling with no request lost; a model that insists on a
 * process of its own.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../harness/fault-handlers';
import { addModel, mlpForward, mlpModel, slowMatmulModel, writeModelDir } from '../../harness/onnx-models';
import { assertRowsClose } from '../helpers/assert-close';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

const spec = (seed: number) => ({ sizes: [4, 8, 3], seed });
const rows = [
  [1, 2, 3, 4],
  [-1, 0.5, 0, 2],
];

async function loadMlps(t: TestServer, names: string[], extra: Record<string, unknown> = {}): Promise<void> {
  const answers = await Promise.all(
    names.map((name, i) => loadModel(t, name, writeModelDir(t.store, name, mlpModel(spec(i + 1))), extra)),
  );
  for (const r of answers) assert.equal(r.status, 200, r.text);
}

/** Each of `names` (loaded by loadMlps, in that order) answers 200 with its own weights' forward pass. */
async function assertOwnWeights(t: TestServer, names: string[]): Promise<void> {
  const answers = await Promise.all(names.map((n) => invoke(t, n, { inputs: { input: rows } })));
  answers.forEach((res, i) => {
    assert.equal(res.status, 200, res.text);
    assertRowsClose(res.body.outputs.output, mlpForward(spec(i + 1), rows), names[i]);
  });
}

describe('shared worker hosts (worker_mode=shared)', function () {
  this.timeout(120_000);

  describe('many models in a few hosts', () => {
    let t: TestServer;
    const names = Array.from({ length: 24 }, (_, i) => `m${i}`);
    before(async () => {
      t = await startTestServer('worker_mode=shared\nshared_workers=2\nmodel_cache=off');
      await loadMlps(t, names);
    });
    after(async () => t.close());

    it('holds 24 models in 2 processes, and each answers with its own weights', async () => {
      assert.equal(workerPidsOf(process.pid).length, 2, 'two host processes, no process per model');
      await assertOwnWeights(t, names);
    });

    it("spreads the models over the hosts, and describe names the host and the model's own cost", async () => {
      const hosts = new Map<string, number>();
      for (const n of names) {
        const d = (await request(`${t.managementUrl}/models/${n}`)).body;
        assert.equal(d.workerMode, 'shared');
        assert.equal(d.workers.length, 1);
        const w = d.workers[0];
        assert.match(w.host, /^host-\d+$/);
        assert.ok(
          w.memoryUsage > 0 && w.memoryUsage < 16 * 2 ** 20,
          `a tiny model costs well under a process (${w.memoryUsage} bytes)`,
        );
        hosts.set(w.host, (hosts.get(w.host) ?? 0) + 1);
      }
      assert.equal(hosts.size, 2);
      for (const count of hosts.values())
        assert.ok(count >= 8, `placement by free room fills both hosts: ${[...hosts.values()]}`);
    });

    it('holds a model with initial_workers=2 in two hosts, and serves it from both', async () => {
      const dir = writeModelDir(t.store, 'twice', mlpModel(spec(50)));
      assert.equal((await loadModel(t, 'twice', dir, { initial_workers: 2 })).status, 200);
      const d = (await request(`${t.managementUrl}/models/twice`)).body;
      assert.equal(new Set(d.workers.map((w: { host: string }) => w.host)).size, 2);
      const answers = await Promise.all(
        Array.from({ length: 32 }, () => invoke(t, 'twice', { inputs: { input: rows } })),
      );
      for (const res of answers) assertRowsClose(res.body.outputs.output, mlpForward(spec(50), rows), 'twice');
      assert.equal(workerPidsOf(process.pid).length, 2);
    });

    it('unloads a model by releasing its slot: the host stays, the other models still answer', async () => {
      const pids = workerPidsOf(process.pid).sort();
      assert.equal((await request(`${t.managementUrl}/models/m0`, { method: 'DELETE' })).status, 200);
      assert.equal((await invoke(t, 'm0', { inputs: { input: rows } })).status, 404);
      assert.deepEqual(workerPidsOf(process.pid).sort(), pids);
      const res = await invoke(t, 'm1', { inputs: { input: rows } });
      assertRowsClose(res.body.outputs.output, mlpForward(spec(2), rows), 'm1');
    });
  });
});

describe('shared worker hosts with onnx_graph_optimization_level=basic', function () {
  this.timeout(120_000);
  let t: TestServer;
  after(async () => t?.close());

  it('load their sessions with the basic optimizations and answer as with all of them', async () => {
    t = await startTestServer(
      'worker_mode=shared\nshared_workers=1\nmodel_cache=off\nonnx_graph_optimization_level=basic',
    );
    const names = ['b0', 'b1', 'b2'];
    await loadMlps(t, names);
    await assertOwnWeights(t, names);
  });
});

describe('shared worker hosts run their models side by side: a slow model never holds back its neighbours', function () {
  this.timeout(120_000);
  let t: TestServer;
  afterEach(async () => t?.close());

  it("answers a tiny model's requests while a slow neighbour's batch is held in the same host, then the slow one; describe shows each model's share of the host", async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    assert.equal(
      (await loadModel(t, 'slow', writeModelDir(t.store, 'slow', addModel(), { 'handler.js': behaviourHandler })))
        .status,
      200,
    );
    await loadMlps(t, ['tiny']);
    const [hostPid] = workerPidsOf(process.pid);
    const go = path.join(tempDir(), 'go');
    const order: string[] = [];
    const slow = invoke(t, 'slow', { awaitFile: go, echo: 'slow' }).then((res) => {
      order.push('slow');
      return res;
    });
    await waitFor(
      () => t.server.manager.registry.get('slow').inFlightRequests === 1,
      'the slow request to reach the host',
    );
    for (let i = 0; i < 8; i++) {
      const res = await invoke(t, 'tiny', { inputs: { input: rows } });
      assert.equal(res.status, 200, res.text);
      assertRowsClose(res.body.outputs.output, mlpForward(spec(1), rows), 'tiny');
      order.push('tiny');
    }
    fs.writeFileSync(go, '');
    const res = await slow;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.pid, hostPid, 'one host ran both');
    assert.deepEqual(order, [...Array(8).fill('tiny'), 'slow']);
    const share = async (name: string) => (await request(`${t.managementUrl}/models/${name}`)).body.workers[0].cpuShare;
    const tiny = await share('tiny');
    assert.ok(tiny > 0 && tiny <= 1, `tiny's session runs took a share of the host: ${tiny}`);
    assert.equal(await share('slow'), 0, "slow's handler never ran its session");
  });
});

describe('shared worker hosts move the neighbours of a heavy model away (shared_host_heavy_share)', function () {
  this.timeout(180_000);
  let t: TestServer;
  afterEach(async () => t?.close());

  it("moves the tiny models that ran beside a model taking most of its host to the other host, loses no request, places new models elsewhere, and reports each model's run time", async () => {
    t = await startTestServer(
      // autoscale=off: the heavy model stays in its host (autoscale would promote it to a process of its own).
      'worker_mode=shared\nshared_workers=2\nmodel_cache=off\nshared_host_heavy_share=0.3\nmetrics_per_model_dimension=true\nautoscale=off',
    );
    const tinies = ['tiny0', 'tiny1', 'tiny2', 'tiny3'];
    // Tiny ones first, spread over both hosts by memory; the heavy one then joins one of them.
    await loadMlps(t, tinies);
    assert.equal((await loadModel(t, 'heavy', writeModelDir(t.store, 'heavy', slowMatmulModel(640)))).status, 200);
    const hostOf = async (name: string): Promise<string> =>
      (await request(`${t.managementUrl}/models/${name}`)).body.workers[0].host;
    const heavyHost = await hostOf('heavy');
    const besideAtFirst = (await Promise.all(tinies.map(hostOf))).filter((h) => h === heavyHost).length;
    assert.ok(besideAtFirst > 0, 'placement by memory put some tiny model beside the heavy one');
    let done = false;
    const failures: string[] = [];
    const heavyRow = { inputs: { input: [Array.from({ length: 640 }, (_, i) => (i % 5) / 5)] } };
    const drive = async (name: string, body: unknown) => {
      while (!done) {
        const res = await invoke(t, name, body);
        if (res.status !== 200) failures.push(`${name}: ${res.status} ${res.text.slice(0, 200)}`);
      }
    };
    const traffic = [
      drive('heavy', heavyRow),
      drive('heavy', heavyRow),
      ...tinies.map((n) => drive(n, { inputs: { input: rows } })),
    ];
    try {
      await waitFor(
        async () => (await Promise.all(tinies.map(hostOf))).every((h) => h !== heavyHost),
        "every tiny model to leave the heavy model's host",
        120_000,
        200,
      );
    } finally {
      done = true;
      await Promise.all(traffic);
    }
    assert.deepEqual(failures, [], 'no request failed while the models moved');
    // Its run time is what made it heavy, and the metrics show it: far above any tiny model's.
    const metrics = (await request(`${t.managementUrl}/metrics`)).text;
    const runSeconds = (name: string) =>
      Number(new RegExp(`^mme_shared_host_run_seconds_total\\{model="${name}"\\} (\\S+)$`, 'm').exec(metrics)?.[1]);
    assert.ok(
      runSeconds('heavy') > 10 * runSeconds('tiny0'),
      `run time heavy ${runSeconds('heavy')} s, tiny0 ${runSeconds('tiny0')} s`,
    );
    assert.equal(await hostOf('heavy'), heavyHost, 'the heavy model stays where it is');
    await loadMlps(t, ['late']);
    assert.notEqual(await hostOf('late'), heavyHost, 'a host busy with a heavy model is the last choice for a new one');
    for (const n of [...tinies, 'late'])
      assertRowsClose(
        (await invoke(t, n, { inputs: { input: rows } })).body.outputs.output,
        mlpForward(spec(tinies.includes(n) ? tinies.indexOf(n) + 1 : 1), rows),
        n,
      );
  });
});

describe('shared worker hosts: faults, memory and recycling', function () {
  this.timeout(120_000);
  let t: TestServer;
  afterEach(async () => t?.close());

  const behaviourModel = (name: string) => writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler });
  const call = (name: string, body: unknown) => invoke(t, name, body);

  for (const death of [
    {
      how: 'exits',
      cmd: { exit: 3 },
      status: 500,
      code: 'MME_ERR_WORKER_DIED',
      log: /shared host .* exited with code 3/,
    },
    {
      how: "is SIGKILLed (the OOM killer's signature)",
      cmd: { kill: true },
      status: 507,
      code: 'MME_ERR_INSUFFICIENT_MEMORY',
      log: /shared host .* was killed by SIGKILL \(exit reason: oom\)/,
    },
  ])
    it(`a host that ${death.how} fails only its running request (${death.status}); the other model's requests are answered meanwhile, and the ones queued behind it after the model reloads`, async () => {
      t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
      for (const n of ['a', 'b']) assert.equal((await loadModel(t, n, behaviourModel(n))).status, 200);
      const [hostPid] = workerPidsOf(process.pid);
      const go = path.join(tempDir(), 'go');
      const { manager } = t.server;
      // Waits without blocking the host: its other models' batches run meanwhile.
      const running = call('a', { awaitFile: go, ...death.cmd });
      await waitFor(() => manager.registry.get('a').inFlightRequests === 1, 'the crashing request to reach the host');
      const queued = Array.from({ length: 4 }, (_, i) => call('a', { echo: i }));
      const beside = await Promise.all(Array.from({ length: 4 }, (_, i) => call('b', { echo: i })));
      for (const res of beside)
        assert.equal(res.body.pid, hostPid, `b is answered by the host a's request holds: ${res.text}`);
      await waitFor(
        () => manager.registry.get('a').queueLength + manager.registry.get('a').inFlightRequests >= 5,
        "a's requests to be admitted",
      );
      fs.writeFileSync(go, '');
      const crashed = await running;
      assert.equal(crashed.status, death.status, crashed.text);
      assert.equal(crashed.body.errorCode, death.code);
      assert.doesNotMatch(crashed.body.message, /also running/, 'nothing else was running beside it');
      const answers = await Promise.all(queued);
      for (const res of answers) {
        assert.equal(res.status, 200, res.text);
        assert.notEqual(res.body.pid, hostPid, 'answered by the new host');
      }
      assert.deepEqual(
        answers.map((r) => r.body.echo),
        [0, 1, 2, 3],
      );
      assert.ok(
        t.logs.some((l) => death.log.test(l)),
        'the death is logged with its exit and reason',
      );
      assert.match((await request(`${t.managementUrl}/metrics`)).text, /^mme_shared_host_restarts_total 1$/m);
    });

  it('a host that dies while two models run fails the running request of each, names the other model in each error, and requeues what waited behind them', async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    for (const n of ['a', 'b']) assert.equal((await loadModel(t, n, behaviourModel(n))).status, 200);
    const [hostPid] = workerPidsOf(process.pid);
    const dir = tempDir();
    const { manager } = t.server;
    const runningB = call('b', { awaitFile: path.join(dir, 'never') });
    await waitFor(() => manager.registry.get('b').inFlightRequests === 1, "b's request to reach the host");
    const waitingB = call('b', { echo: 'after' });
    const runningA = call('a', { awaitFile: path.join(dir, 'go'), exit: 3 });
    await waitFor(
      () =>
        manager.registry.get('a').inFlightRequests === 1 &&
        manager.registry.get('b').queueLength + manager.registry.get('b').inFlightRequests === 2,
      "both models' requests to be admitted",
    );
    fs.writeFileSync(path.join(dir, 'go'), '');
    const [a, b] = await Promise.all([runningA, runningB]);
    for (const [res, own, other] of [
      [a, 'a', 'b'],
      [b, 'b', 'a'],
    ] as const) {
      assert.equal(res.status, 500, res.text);
      assert.equal(res.body.errorCode, 'MME_ERR_WORKER_DIED');
      assert.match(
        res.body.message,
        new RegExp(
          `^The worker of model ${own} exited with code 3 while running this request\\. It was a shared host, also running requests of model ${other}; which of them caused it is not known\\.$`,
        ),
      );
    }
    const after = await waitingB;
    assert.equal(after.status, 200, after.text);
    assert.notEqual(after.body.pid, hostPid, "what waited behind b's running request is answered by the new host");
    assert.equal((await call('a', { echo: 'again' })).status, 200);
    assert.match((await request(`${t.managementUrl}/metrics`)).text, /^mme_shared_host_restarts_total 1$/m);
  });

  it("a host killed for one model's timeout tells another model's running request which model it was", async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    assert.equal((await loadModel(t, 'slow', behaviourModel('slow'), { response_timeout: 2 })).status, 200);
    assert.equal((await loadModel(t, 'busy', behaviourModel('busy'))).status, 200);
    const never = path.join(tempDir(), 'never');
    // Both run side by side in the host until slow's timeout kills it.
    const running = call('busy', { awaitFile: never });
    await waitFor(
      () => t.server.manager.registry.get('busy').inFlightRequests === 1,
      "busy's request to reach the host",
    );
    const late = await call('slow', { awaitFile: never });
    assert.equal(late.status, 504, late.text);
    const victim = await running;
    assert.equal(victim.status, 504, victim.text);
    assert.match(
      victim.body.message,
      /^The shared host running this request of model busy was stopped because model slow ran past its timeout/,
    );
    assert.equal((await call('busy', { echo: 'after' })).status, 200);
  });

  it('answers 507 when the memory budget is spent, starting nothing; with the cache on it evicts instead', async () => {
    const big = (seed: number) => mlpModel({ sizes: [4, 1024, 1024, 3], seed });
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off\nmodel_memory_budget_mb=120');
    const pids = () => workerPidsOf(process.pid).sort();
    let fitted = 0;
    let refused: Awaited<ReturnType<typeof loadModel>> | null = null;
    // A model costs 4-9 MB here, depending on how much freed memory its load could reuse.
    for (let i = 0; i < 60 && !refused; i++) {
      const before = pids();
      const res = await loadModel(t, `big${i}`, writeModelDir(t.store, `big${i}`, big(i)));
      if (res.status === 200) fitted++;
      else {
        refused = res;
        assert.deepEqual(pids(), before, 'a refused load starts no process');
      }
    }
    assert.ok(refused, 'the budget ran out');
    assert.equal(refused.status, 507, refused.text);
    assert.match(refused.body.message, /model memory budget/);
    assert.ok(fitted >= 2, `${fitted} models of ~6 MB fit next to the host`);
    await t.close();

    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=on\nmodel_memory_budget_mb=120');
    // Twice what fitted before: a model's measured cost varies with what memory its load could reuse.
    const loads = fitted * 2 + 4;
    for (let i = 0; i < loads; i++) {
      const res = await loadModel(t, `big${i}`, writeModelDir(t.store, `big${i}`, big(i)));
      assert.equal(res.status, 200, res.text);
    }
    const { evictions } = t.server.manager.events.stats;
    assert.ok(evictions >= 1, 'loads past the budget evicted models instead of failing');
    assert.equal(t.server.manager.registry.servingCount(), loads - evictions);
    assert.ok(t.server.manager.registry.held('all').bytes <= t.server.manager.lifecycle.budgetBytes);
    const res = await invoke(t, 'big0', { inputs: { input: rows } });
    assert.equal(res.status, 200, 'an evicted model loads again on its next request');
    assertRowsClose(res.body.outputs.output, mlpForward({ sizes: [4, 1024, 1024, 3], seed: 0 }, rows), 'big0');
  });

  it('recycles a host that keeps freed memory: models move to a new host under traffic and no request is lost', async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off\nshared_worker_recycle_mb=1');
    const names = Array.from({ length: 6 }, (_, i) => `k${i}`);
    await loadMlps(t, names);
    const [oldPid] = workerPidsOf(process.pid);
    let stop = false;
    const failures: string[] = [];
    let answered = 0;
    const traffic = Promise.all(
      names.slice(0, 3).map(async (n, i) => {
        while (!stop) {
          const res = await invoke(t, n, { inputs: { input: rows } });
          if (res.status !== 200) failures.push(`${n}: ${res.status} ${res.text}`);
          else assertRowsClose(res.body.outputs.output, mlpForward(spec(i + 1), rows), n);
          answered++;
        }
      }),
    );
    // Churn: load and unload large models until the host has kept more than 1 MB it no longer uses.
    for (let i = 0; !t.logs.some((l) => /\] recycling: /.test(l)); i++) {
      assert.ok(i < 50, 'the host was never recycled');
      const name = `churn${i}`;
      assert.equal(
        (await loadModel(t, name, writeModelDir(t.store, name, mlpModel({ sizes: [4, 512, 3], seed: i })))).status,
        200,
      );
      assert.equal((await request(`${t.managementUrl}/models/${name}`, { method: 'DELETE' })).status, 200);
    }
    await waitFor(() => !workerPidsOf(process.pid).includes(oldPid), 'the old host to exit', 60_000);
    const before = answered;
    await waitFor(() => answered > before + 10, 'traffic on the new host', 60_000);
    stop = true;
    await traffic;
    assert.deepEqual(failures, []);
    // A threshold of 1 MB may recycle the new host too: whatever is left running is a host the pool serves with.
    const pool = t.server.manager.workers.hosts!;
    await waitFor(
      () => workerPidsOf(process.pid).every((pid) => pool.hosts.some((h) => h.pid === pid)),
      'retired hosts to exit',
      60_000,
    );
    for (const [i, n] of names.entries()) {
      const res = await invoke(t, n, { inputs: { input: rows } });
      assertRowsClose(res.body.outputs.output, mlpForward(spec(i + 1), rows), n);
    }
    assert.ok(t.logs.some((l) => /recycling: [\d.]+ MB freed by unloads is still held/.test(l)));
    assert.match((await request(`${t.managementUrl}/metrics`)).text, /^mme_shared_host_recycles_total [1-9]\d*$/m);
  });

  it('caps each host at max_models_per_worker: a load that finds every host full is 503 with the fix, and leaves nothing behind', async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmax_models_per_worker=2\nmodel_cache=off');
    await loadMlps(t, ['c1', 'c2']);
    const res = await loadModel(t, 'c3', writeModelDir(t.store, 'c3', mlpModel(spec(3))));
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_NO_WORKER');
    assert.match(res.body.message, /max_models_per_worker \(2\)/);
    assert.equal((await request(`${t.managementUrl}/models/c3`)).status, 404);
    assert.equal((await request(`${t.managementUrl}/models/c1`, { method: 'DELETE' })).status, 200);
    assert.equal(
      (await loadModel(t, 'c3', writeModelDir(t.store, 'c3', mlpModel(spec(3))))).status,
      200,
      'the freed slot takes the next model',
    );
  });

  it('runs a model whose model-config.json insists on dedicated mode in a process of its own, whatever the load asks', async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    await loadMlps(t, ['s1']);
    const hosts = workerPidsOf(process.pid);
    const dir = writeModelDir(t.store, 'own', mlpModel(spec(9)), {
      'model-config.json': JSON.stringify({ workerMode: 'dedicated' }),
    });
    assert.equal((await loadModel(t, 'own', dir, { worker_mode: 'shared' })).status, 200);
    const d = (await request(`${t.managementUrl}/models/own`)).body;
    assert.equal(d.workerMode, 'dedicated');
    assert.equal(d.workers[0].host, null);
    assert.equal(workerPidsOf(process.pid).length, hosts.length + 1);
    assert.ok(!hosts.includes(d.workers[0].pid));
    const res = await invoke(t, 'own', { inputs: { input: rows } });
    assertRowsClose(res.body.outputs.output, mlpForward(spec(9), rows), 'own');
  });
});

describe("shared worker hosts contain faults: one model's mistakes never fail another model's request in the same host", function () {
  this.timeout(120_000);
  let t: TestServer;
  afterEach(async () => t?.close());

  /** Throws, or sets one response field wrong (issue 21's handler garbage), as the request says; else answers. */
  const faultyHandler = `
exports.handle = async (requests, ctx) => {
  const cmd = JSON.parse(requests[0].body.toString() || '{}');
  if (cmd.throw) throw new Error('the handler broke');
  if (cmd.header) ctx.setResponseHeader(0, 'x-n', 42);
  if (cmd.contentType) ctx.setResponseContentType(0, 7);
  if (cmd.status) ctx.setResponseStatus(0, 70000);
  return requests.map(() => JSON.stringify({ ok: true }));
};
`;

  it("bad input, a handler that throws, a handler that returns garbage and a failed load beside it leave the other model's requests and the host untouched", async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    const x = Array.from({ length: 16 }, (_, i) => i / 4);
    const canary = { inputs: { x: [x] } };
    const expected = [x.map((v) => v + 1)];
    for (const [name, extra] of [
      ['steady', {}],
      ['plain', {}],
      ['faulty', { 'handler.js': faultyHandler }],
    ] as const) {
      assert.equal((await loadModel(t, name, writeModelDir(t.store, name, addModel(), extra))).status, 200);
    }
    const hosts = workerPidsOf(process.pid);
    assert.equal(hosts.length, 1, 'one host holds all three models');
    let stop = false;
    let answered = 0;
    const failures: string[] = [];
    const traffic = Promise.all(
      Array.from({ length: 3 }, async () => {
        while (!stop) {
          const res = await invoke(t, 'steady', canary);
          if (res.status !== 200) failures.push(`${res.status} ${res.text}`);
          else assertRowsClose(res.body.outputs.y, expected, 'steady');
          answered++;
        }
      }),
    );
    const faults: Array<[string, () => Promise<{ status: number; text: string; body: any }>, number, string]> = [
      // eslint-disable-line @typescript-eslint/no-explicit-any
      [
        'invalid JSON',
        () =>
          request(`${t.url}/models/plain/invoke`, {
            method: 'POST',
            body: '{"inputs":',
            headers: { 'content-type': 'application/json' },
          }),
        400,
        'MME_ERR_INVALID_INPUT',
      ],
      ['a wrong shape', () => invoke(t, 'plain', { inputs: { x: [[1, 2, 3]] } }), 400, 'MME_ERR_INVALID_INPUT'],
      [
        'an input named __proto__',
        () =>
          request(`${t.url}/models/plain/invoke`, {
            method: 'POST',
            body: '{"inputs": {"__proto__": [[1]]}}',
            headers: { 'content-type': 'application/json' },
          }),
        400,
        'MME_ERR_INVALID_INPUT',
      ],
      [
        'a CSV body of 0x01 bytes',
        () =>
          request(`${t.url}/models/plain/invoke`, {
            method: 'POST',
            body: Buffer.alloc(1 << 20, 1),
            headers: { 'content-type': 'text/csv' },
          }),
        400,
        'MME_ERR_INVALID_INPUT',
      ],
      ['a handler that throws', () => invoke(t, 'faulty', { throw: true }), 500, 'MME_ERR_MODEL_ERROR'],
      [
        'a handler that sets a number as a header value',
        () => invoke(t, 'faulty', { header: true }),
        500,
        'MME_ERR_MODEL_ERROR',
      ],
      [
        'a handler that sets a number as the content type',
        () => invoke(t, 'faulty', { contentType: true }),
        500,
        'MME_ERR_MODEL_ERROR',
      ],
      ['a handler that sets status 70000', () => invoke(t, 'faulty', { status: true }), 500, 'MME_ERR_MODEL_ERROR'],
      [
        'a load whose handler fails to initialise',
        () =>
          loadModel(
            t,
            'broken',
            writeModelDir(t.store, 'broken', addModel(), {
              'handler.js': "exports.initialize = () => { throw new Error('no'); };\n",
            }),
          ),
        400,
        'MME_ERR_INVALID_MODEL',
      ],
      [
        'a load of a file that is not a model',
        () => loadModel(t, 'corrupt', writeModelDir(t.store, 'corrupt', Buffer.from('garbage'))),
        400,
        'MME_ERR_INVALID_MODEL',
      ],
    ];
    for (const [what, send, status, code] of faults) {
      // Each fault lands while the other model is being served.
      const before = answered;
      await waitFor(() => answered > before, `canary traffic before ${what}`);
      const res = await send();
      assert.equal(res.status, status, `${what}: ${res.text.slice(0, 300)}`);
      assert.equal(res.body.errorCode, code, what);
    }
    const after = answered;
    await waitFor(() => answered > after + 10, 'canary traffic after the faults');
    stop = true;
    await traffic;
    assert.deepEqual(failures, [], 'a request of another model failed');
    assert.deepEqual(workerPidsOf(process.pid), hosts, 'the host was never replaced');
    assert.deepEqual((await invoke(t, 'faulty', {})).body, { ok: true }, 'the faulty model itself serves on');
    assert.equal((await invoke(t, 'plain', canary)).status, 200);
    assert.ok(!t.logs.some((l) => /shared host .* (exited|was killed)/.test(l)), 'no host died');
  });
});
