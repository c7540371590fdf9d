/**
 * Autoscaling on a real server with real worker processes: a burst queued behind a busy worker
 * gets the model a second worker (through the memory admission, as a log line, an event and
 * describe's target), every request is answered 200, and once quiet the worker goes again, never
 * below min_worker. A barrier file holds the first worker busy, so the order never depends on
 * timing; the test waits for events, never for a time. In shared mode, a burst on a heavy model
 * promotes it to a process of its own and, once quiet, demotes it back, with every request of the
 * burst answered 200 while it moves.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../harness/fault-handlers';
import { addModel, slowMatmulModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

describe('autoscale (real worker processes)', () => {
  let t: TestServer;
  let barrier: string;

  before(async () => {
    t = await startTestServer(
      [
        'autoscale=on',
        'autoscale_backlog_per_worker=2',
        'autoscale_idle_seconds=1',
        'autoscale_cooldown_seconds=1',
        // Two workers, whatever this machine's cores (the limit's own tests are in test/server/autoscale/autoscaler.test.ts).
        'autoscale_cores=2',
        'metrics_per_model_dimension=true',
      ].join('\n'),
    );
    barrier = path.join(tempDir('mme-barrier-'), 'open');
  });
  after(async () => {
    fs.writeFileSync(barrier, '');
    await t.close();
  });

  it('a burst behind a busy worker gets a second worker, every request is answered, and the worker goes once quiet', async () => {
    const name = 'hot';
    const dir = writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler });
    assert.equal((await loadModel(t, name, dir)).status, 200);
    const scaled = await request(`${t.url}/models/${name}?min_worker=1&max_worker=2&synchronous=true`, {
      method: 'PUT',
    });
    assert.equal(scaled.status, 200, scaled.text);
    const model = t.server.manager.registry.get(name);
    const [first] = model.workers;
    // The first worker holds the barrier in every pipeline slot: what comes next waits in the queue.
    const slots = first.capacity;
    const held = Array.from({ length: slots }, (_, i) => invoke(t, name, { barrier, echo: `held${i}` }));
    await waitFor(() => model.inFlightRequests === slots, 'the first worker to be busy');
    const burst = Array.from({ length: 12 }, (_, i) => invoke(t, name, { echo: i }));
    await waitFor(() => model.workerTarget === 2, 'the scale-up');
    const answers = await Promise.all(burst);
    assert.deepEqual(new Set(answers.map((r) => r.status)), new Set([200]));
    // The first worker is still held: the burst was served by the worker autoscale added.
    assert.ok(answers.every((r) => r.body.pid !== first.pid));
    assert.ok(t.logs.some((l) => l.startsWith(`[${name}] autoscale: up to 2 worker(s), backlog:`)));
    const described = (await request(`${t.url}/models/${name}`)).body;
    assert.equal(described.workerTarget, 2);
    assert.equal(described.autoscale.lastDecision.reason, 'backlog');

    fs.writeFileSync(barrier, '');
    assert.deepEqual(new Set((await Promise.all(held)).map((r) => r.status)), new Set([200]));
    await waitFor(() => model.workerTarget === 1 && model.workers.length === 1, 'the scale-down once quiet', 30_000);
    assert.ok(t.logs.some((l) => l.startsWith(`[${name}] autoscale: down to 1 worker(s), idle:`)));
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    for (const [direction, reason] of [
      ['up', 'backlog'],
      ['down', 'idle'],
    ])
      assert.match(
        metrics,
        new RegExp(`mme_autoscale_events_total\\{[^}]*direction="${direction}"[^}]*reason="${reason}"[^}]*\\} 1`),
      );
    assert.match(metrics, new RegExp(`mme_model_workers\\{model="${name}"\\} \\d`));
  });
});

describe('autoscale promotion (real shared host, real worker processes)', function () {
  this.timeout(180_000);
  let t: TestServer;
  after(async () => t?.close());

  it('a burst on a heavy shared model promotes it to a process of its own, and once quiet it goes back; every request is answered 200', async () => {
    t = await startTestServer(
      [
        'worker_mode=shared',
        'shared_workers=1',
        // Well under what three clients back to back make of its runs, on a busy machine too.
        'shared_host_heavy_share=0.3',
        'autoscale=on',
        'autoscale_idle_seconds=1',
        'autoscale_cooldown_seconds=1',
        'metrics_per_model_dimension=true',
      ].join('\n'),
    );
    const name = 'heavy';
    assert.equal((await loadModel(t, name, writeModelDir(t.store, name, slowMatmulModel(640)))).status, 200);
    assert.equal((await loadModel(t, 'tiny', writeModelDir(t.store, 'tiny', addModel()))).status, 200);
    const model = t.server.manager.registry.get(name);
    const [host] = model.workers.map((w) => w.sharedHostId);
    assert.ok(host, 'loaded into the shared host');
    const row = { inputs: { input: [Array.from({ length: 640 }, (_, i) => (i % 7) / 7)] } };
    let done = false;
    const statuses: number[] = [];
    const drive = async () => {
      while (!done) statuses.push((await invoke(t, name, row)).status);
    };
    // Three clients back to back: its runs keep the host's thread busy until it has moved.
    const burst = [drive(), drive(), drive()];
    try {
      await waitFor(
        () => model.mode === 'dedicated' && model.workers.length === 1 && model.workers[0].sharedHostId === null,
        'the promotion to be done',
        120_000,
      );
    } finally {
      done = true;
      await Promise.all(burst);
    }
    assert.ok(statuses.length > 0);
    assert.deepEqual(new Set(statuses), new Set([200]), 'no request failed while the model moved');
    assert.ok(
      t.logs.some((l) => l.startsWith(`[${name}] autoscale: promoted to processes of its own (1 worker(s)), promote:`)),
    );
    const described = (await request(`${t.url}/models/${name}`)).body;
    assert.equal(described.workers[0].host, null);
    assert.equal(described.autoscale.placement, 'dedicated');
    assert.equal(described.autoscale.lastDecision.reason, 'promote');
    assert.equal((await invoke(t, 'tiny', { inputs: { x: [Array(16).fill(1)] } })).status, 200);

    await waitFor(
      () => model.mode === 'shared' && model.workers[0]?.sharedHostId === host,
      'the demotion once quiet',
      60_000,
    );
    assert.equal((await invoke(t, name, row)).status, 200);
    assert.ok(
      t.logs.some((l) => l.startsWith(`[${name}] autoscale: demoted into a shared host (1 worker(s)), demote:`)),
    );
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    for (const [direction, reason] of [
      ['up', 'promote'],
      ['down', 'demote'],
    ])
      assert.match(
        metrics,
        new RegExp(`mme_autoscale_events_total\\{[^}]*direction="${direction}"[^}]*reason="${reason}"[^}]*\\} 1`),
      );
  });
});
