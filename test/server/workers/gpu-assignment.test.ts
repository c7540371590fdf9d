import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../../harness/fault-handlers';
import { addModel, writeModelDir } from '../../../harness/onnx-models';
import { invoke, loadModel, request } from '../../../harness/http-requests';
import { waitFor } from '../../../harness/process-probes';
import { startTestServer, tempDir } from '../../../harness/test-server';
import { gpuRoundRobin } from '../../../src/server/workers/worker-factory';

describe('GPU assignment', () => {
  it('gives CPU (-1) to every worker when number_of_gpu is 0', () => {
    const gpuFor = gpuRoundRobin(0);
    assert.deepEqual([gpuFor(null)(), gpuFor(null)()], [-1, -1]);
  });

  it('goes round-robin over number_of_gpu across all models, as TorchServe does', () => {
    const gpuFor = gpuRoundRobin(3);
    const [a, b, c] = [gpuFor(null), gpuFor(null), gpuFor(null)];
    assert.deepEqual([a(), b(), a(), c(), b()], [0, 1, 2, 0, 1]);
  });

  it("goes round-robin over a model's own deviceIds, independently of other models", () => {
    const gpuFor = gpuRoundRobin(8);
    const [a, b] = [gpuFor([5, 7]), gpuFor([2])];
    assert.deepEqual([a(), a(), b(), a()], [5, 7, 2, 5]);
    assert.equal(gpuFor([5, 7])(), 5, 'a model loaded again starts over');
  });

  it('sets CUDA_VISIBLE_DEVICES per worker and falls back to CPU with a warning when CUDA is absent', async () => {
    const t = await startTestServer('number_of_gpu=2');
    try {
      const dir = writeModelDir(t.store, 'g', addModel(), { 'handler.js': behaviourHandler });
      assert.equal((await loadModel(t, 'g', dir, { initial_workers: 2 })).status, 200);
      const described = await request(`${t.url}/models/g`);
      assert.deepEqual(described.body.workers.map((w: { gpuId: number }) => w.gpuId).sort(), [0, 1]);
      assert.ok(described.body.workers.every((w: { executionProvider: string }) => w.executionProvider === 'cpu'));
      // Two requests held in the handler until a gate opens: the second is sent once the first is in
      // a worker, so it goes to the other one, whatever the machine's speed.
      const model = t.server.manager.registry.get('g');
      const gate = path.join(tempDir('mme-gpu-gate-'), 'open');
      const held: Array<Promise<{ body: { cuda: string } }>> = [];
      for (let n = 1; n <= 2; n++) {
        held.push(invoke(t, 'g', { awaitFile: gate }));
        await waitFor(() => model.inFlightRequests === n && model.queueLength === 0, `request ${n} in a worker`);
      }
      fs.writeFileSync(gate, '');
      const seen = (await Promise.all(held)).map((r) => r.body.cuda);
      assert.deepEqual(seen.sort(), ['0', '1']);
      assert.ok(
        t.logs.some((l) => /GPU \d assigned but the CUDA execution provider is not available.*running on CPU/.test(l)),
        'fallback warning logged',
      );

      const pinned = writeModelDir(t.store, 'p', addModel(), { 'handler.js': behaviourHandler });
      assert.equal((await loadModel(t, 'p', pinned, { device_ids: [1] })).status, 200);
      assert.equal((await invoke(t, 'p', { echo: 1 })).body.cuda, '1');
    } finally {
      await t.close();
    }
  });
});
