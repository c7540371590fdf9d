/**
 * Dynamic batching: requests of one model that arrive within max_batch_delay run as one
 * session.run, and each caller still gets exactly its own rows back.
 */
import assert from 'node:assert/strict';
import { behaviourHandler } from '../../harness/fault-handlers';
import { assertRowsClose } from '../helpers/assert-close';
import { addModel, identityModel, mlpForward, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { invoke, loadModel } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

/**
 * A batch that leaves only when full: requests sent together share it however slow the machine is
 * (a request that never reached the queue would show as the test's timeout).
 */
const kWhenFull = 600_000;

describe('dynamic batching', () => {
  let t: TestServer;
  const specA = { sizes: [4, 16, 3], seed: 11 };
  const specB = { sizes: [4, 16, 3], seed: 12 };

  before(async () => {
    t = await startTestServer();
    const batching = { batch_size: 8, max_batch_delay: kWhenFull };
    const loads = await Promise.all([
      loadModel(t, 'a', writeModelDir(t.store, 'a', mlpModel(specA)), batching),
      loadModel(t, 'b', writeModelDir(t.store, 'b', mlpModel(specB)), batching),
      loadModel(t, 'ident', writeModelDir(t.store, 'ident', identityModel('float32')), {
        batch_size: 4,
        max_batch_delay: 2000,
      }),
      loadModel(t, 'echo', writeModelDir(t.store, 'echo', addModel(), { 'handler.js': behaviourHandler }), {
        batch_size: 4,
        max_batch_delay: kWhenFull,
      }),
    ]);
    for (const r of loads) assert.equal(r.status, 200, r.text);
  });
  after(async () => {
    await t.close();
  });

  it('runs a full batch as one run and returns each caller its own rows', async () => {
    const model = t.server.manager.registry.get('a');
    const before = { ...model.stats };
    const inputs = Array.from({ length: 8 }, (_, i) =>
      Array.from({ length: (i % 3) + 1 }, (_, r) => [i, r, -i, (i * r) / 2]),
    );
    const results = await Promise.all(inputs.map((rows) => invoke(t, 'a', { inputs: { input: rows } })));
    results.forEach((res, i) => {
      assert.equal(res.status, 200, res.text);
      assertRowsClose(res.body.outputs.output, mlpForward(specA, inputs[i]), `caller ${i}`);
      assert.equal(res.body.outputs.output.length, inputs[i].length);
    });
    assert.equal(model.stats.requests - before.requests, 8);
    assert.equal(model.stats.batches - before.batches, 1, 'eight requests ran as one batch');
  });

  it('never mixes two models, even when their requests interleave', async () => {
    const rows = (i: number) => [[i, 1, 2, 3]];
    const calls = Array.from({ length: 16 }, (_, i) => invoke(t, i % 2 ? 'b' : 'a', { inputs: { input: rows(i) } }));
    const results = await Promise.all(calls);
    results.forEach((res, i) => {
      assert.equal(res.status, 200);
      assertRowsClose(res.body.outputs.output, mlpForward(i % 2 ? specB : specA, rows(i)), `call ${i}`);
    });
  });

  it('fails a bad request alone; the rest of its batch succeeds', async () => {
    const model = t.server.manager.registry.get('a');
    const before = { ...model.stats };
    const good = [[1, 2, 3, 4]];
    const calls = [
      invoke(t, 'a', { inputs: { input: good } }),
      invoke(t, 'a', { inputs: { input: [[1, 2]] } }),
      invoke(t, 'a', { inputs: { wrong: good } }),
      invoke(t, 'a', { inputs: { input: good } }),
      invoke(t, 'a', { instances: good }),
      invoke(t, 'a', good),
      invoke(t, 'a', { inputs: { input: good } }),
      invoke(t, 'a', { inputs: { input: good } }),
    ];
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    assert.deepEqual(statuses, [200, 400, 400, 200, 200, 200, 200, 200]);
    assert.equal(model.stats.requests - before.requests, 8);
    assert.equal(model.stats.batches - before.batches, 1, 'the bad requests shared the batch of the good ones');
  });

  it('runs requests whose shapes cannot be concatenated separately, each correct', async () => {
    const bodies = [[[1, 2]], [[3, 4, 5]], [[6, 7]], [[8, 9, 10, 11]]];
    const results = await Promise.all(bodies.map((x) => invoke(t, 'ident', { inputs: { x } })));
    results.forEach((res, i) => assert.deepEqual(res.body.outputs.y, bodies[i]));
  });

  it('hands a custom handler the whole batch', async () => {
    const results = await Promise.all(Array.from({ length: 4 }, (_, i) => invoke(t, 'echo', { echo: i })));
    assert.deepEqual(
      results.map((r) => r.body.echo),
      [0, 1, 2, 3],
    );
    assert.ok(
      results.every((r) => r.body.batch === 4),
      `batch sizes ${results.map((r) => r.body.batch)}`,
    );
  });

  it('dispatches a partial batch when max_batch_delay expires', async () => {
    const model = t.server.manager.registry.get('ident');
    const before = { ...model.stats };
    const res = await invoke(t, 'ident', { inputs: { x: [[1, 2]] } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.outputs.y, [[1, 2]]);
    assert.deepEqual(
      { requests: model.stats.requests - before.requests, batches: model.stats.batches - before.batches },
      { requests: 1, batches: 1 },
      'one request of a batch_size 4 ran alone',
    );
  });
});
