import assert from 'node:assert/strict';
import { addModel, writeModelDir } from '../../../harness/onnx-models';
import { waitFor, workerPidsOf } from '../../../harness/process-probes';
import { invoke, loadModel, request } from '../../../harness/http-requests';
import { startTestServer } from '../../../harness/test-server';

describe('spare workers', () => {
  it('keeps a started worker ready, hands it to the next load, and starts another', async () => {
    const t = await startTestServer('spare_workers=1');
    try {
      await waitFor(() => t.server.manager.workers.spares.ready === 1, 'the spare worker to start');
      const [spare] = workerPidsOf(process.pid);
      const dir = writeModelDir(t.store, 'add', addModel());
      assert.equal((await loadModel(t, 'add', dir)).status, 200);
      const [worker] = (await request(`${t.url}/models/add`)).body.workers;
      assert.equal(worker.pid, spare, 'the load did not use the spare');
      assert.equal(worker.startupMicros.spawn, 0, 'a spare has no start-up left to wait for');
      const res = await invoke(t, 'add', { inputs: { x: [Array(16).fill(0)] } });
      assert.deepEqual(res.body.outputs.y, [Array(16).fill(1)]);
      await waitFor(
        () => t.server.manager.workers.spares.ready === 1 && workerPidsOf(process.pid).length === 2,
        'a new spare to start',
      );
    } finally {
      await t.close();
    }
    assert.deepEqual(workerPidsOf(process.pid), []);
  });
});
