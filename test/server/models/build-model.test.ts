/**
 * What a model's workers are told to load with (server/models/model.ts): the server's
 * onnxruntime settings reach every Load frame, in a dedicated worker and in a shared host alike.
 * Fake processes that record the frames they receive.
 */
import assert from 'node:assert/strict';
import { waitFor } from '../../../harness/process-probes';
import { processHarness, statusOf } from '../../lifecycle/harness';

describe('build-model: the Load frame a worker gets', () => {
  for (const mode of ['dedicated', 'shared'] as const)
    it(`carries onnx_graph_optimization_level and the thread counts to a ${mode} worker`, async () => {
      const h = processHarness(
        `worker_mode=${mode}\nmodel_cache=off\nspare_workers=0\nonnx_graph_optimization_level=basic\nonnx_intra_op_threads=2`,
      );
      const loaded = statusOf(h.manager.lifecycle.load({ modelName: 'a', url: h.model('a') }));
      await waitFor(() => h.processes.live()[0]?.loads.length === 1, 'the Load frame');
      const [p] = h.processes.live();
      const { graphOptimizationLevel, intraOpThreads, interOpThreads, shared } = p.loads[0];
      assert.deepEqual(
        { graphOptimizationLevel, intraOpThreads, interOpThreads, shared },
        { graphOptimizationLevel: 'basic', intraOpThreads: 2, interOpThreads: 1, shared: mode === 'shared' },
      );
      p.load();
      assert.equal((await loaded).status, 200);
      await h.manager.close(0);
    });
});
