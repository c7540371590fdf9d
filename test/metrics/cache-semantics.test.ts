/**
 * docs/metrics.md's definitions on a real server in self-managed mode (npm start's default): a miss
 * is an invoke that waited for its model's load, a 404 is neither hit nor miss, and the wait for an
 * on-demand load is ModelLoadingWaitTime, not OverheadLatency.
 */
import assert from 'node:assert/strict';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { invoke, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

/** A Prometheus sample's value by its name and labels as printed, e.g. 'mme_x_sum{model="m"}'. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  assert.ok(line, `${series} in:\n${text}`);
  return Number(line.split(' ')[1]);
}

describe('metrics: what counts as a cache miss, and what overhead leaves out', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer('metrics_per_model_dimension=true');
    writeModelDir(t.store, 'm', mlpModel({ sizes: [4, 8, 3], seed: 3 }));
  });
  after(() => t?.close());

  it('counts a 404 as neither hit nor miss, an invoke that waited for the load as a miss, the next as a hit; the load wait is not overhead', async () => {
    assert.equal((await invoke(t, 'nope', [[1, 2, 3, 4]])).status, 404);
    assert.deepEqual(
      [t.server.manager.events.stats.hits, t.server.manager.events.stats.misses],
      [0, 0],
      'a 404 is no lookup',
    );

    assert.equal((await invoke(t, 'm', [[1, 2, 3, 4]])).status, 200);
    assert.equal((await invoke(t, 'm', [[1, 2, 3, 4]])).status, 200);
    assert.deepEqual([t.server.manager.events.stats.hits, t.server.manager.events.stats.misses], [1, 1]);

    const text = (await request(`${t.managementUrl}/metrics`)).text;
    const wait = sample(text, 'mme_model_loading_wait_time_seconds_sum{model="m"}');
    const overhead = sample(text, 'mme_overhead_latency_seconds_sum{model="m"}');
    assert.ok(wait > 0, 'the first invoke waited for the load');
    // Before, the first invoke's overhead held the whole wait, so the sum of two overheads exceeded it.
    assert.ok(overhead < wait, `overhead ${overhead} s < load wait ${wait} s`);
  });
});
