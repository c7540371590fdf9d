/**
 * idle_unload_seconds on a real server with real workers (model_cache=on): a model loaded with
 * idle_unload_seconds=1 is shown with it, unloaded once idle (the log says why, the metric counts
 * it, its worker exits), and its next invoke loads it again from model_store and answers 200.
 */
import assert from 'node:assert/strict';
import { behaviourHandler } from '../../harness/fault-handlers';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { startTestServer, type TestServer } from '../../harness/test-server';

describe('idle unload (real server, real workers)', () => {
  let t: TestServer;
  after(() => t?.close());

  it('unloads a model idle for its idle_unload_seconds, and its next invoke loads it again', async function () {
    this.timeout(120_000);
    t = await startTestServer('model_cache=on');
    const dir = writeModelDir(t.store, 'idle', addModel(), { 'handler.js': behaviourHandler });
    const loaded = await loadModel(t, 'idle', dir, { idle_unload_seconds: 1 });
    assert.equal(loaded.status, 200, loaded.text);
    assert.equal((await request(`${t.managementUrl}/models/idle`)).body.idleUnloadSeconds, 1);
    assert.deepEqual((await request(`${t.managementUrl}/models`)).body.models, [
      { modelName: 'idle', modelUrl: dir, idleUnloadSeconds: 1 },
    ]);
    assert.equal((await invoke(t, 'idle', { echo: 'first' })).body.echo, 'first');
    const [pid] = workerPidsOf(process.pid);

    const why = '[idle] unloaded: idle for 1 s (idle_unload_seconds=1)';
    await waitFor(() => t.logs.includes(why), 'the idle unload', 60_000);
    assert.equal((await request(`${t.managementUrl}/models/idle`)).status, 404);
    assert.match((await request(`${t.managementUrl}/metrics`)).text, /^mme_model_idle_unloads_total 1$/m);
    await waitFor(() => !workerPidsOf(process.pid).includes(pid), 'its worker to exit');

    const again = await invoke(t, 'idle', { echo: 'again' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.echo, 'again');
    assert.equal(t.server.manager.events.stats.loads, 2, 'loaded again on demand');
  });
});
