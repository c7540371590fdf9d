/**
 * onnx_graph_optimization_level=auto (worker-process/optimization-level.ts): the level each model's
 * session gets, on both sides of the thresholds, and on real worker processes as GET /models/{name} shows it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { mlpModel, paddleOcrClsPath, writeModelDir } from '../../harness/onnx-models';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import type { OnnxFile } from '../../src/worker-process/onnx-file';
import { kAutoBasicMaxGraphBytes, kAutoBasicMaxNodes, levelFor } from '../../src/worker-process/optimization-level';

function graph(nodes: number, bytes: number): OnnxFile {
  return {
    nodes: Array.from({ length: nodes }, () => ({})),
    graph: { start: 100, payload: 104, end: 100 + bytes },
  } as unknown as OnnxFile;
}

describe('onnx_graph_optimization_level=auto: the level a model gets', () => {
  it('basic for a graph of at most kAutoBasicMaxNodes nodes and kAutoBasicMaxGraphBytes, all past either', () => {
    assert.equal(levelFor('auto', graph(kAutoBasicMaxNodes, kAutoBasicMaxGraphBytes)), 'basic');
    assert.equal(levelFor('auto', graph(1, 10)), 'basic');
    assert.equal(levelFor('auto', graph(kAutoBasicMaxNodes + 1, 10)), 'all');
    assert.equal(levelFor('auto', graph(1, kAutoBasicMaxGraphBytes + 1)), 'all');
  });

  it('an explicit level whatever the graph', () => {
    for (const level of ['all', 'extended', 'basic', 'disabled'] as const) {
      assert.equal(levelFor(level, graph(1, 10)), level);
      assert.equal(levelFor(level, graph(500, 1e8)), level);
    }
  });
});

describe('onnx_graph_optimization_level on real workers, as GET /models/{name} describes it', function () {
  this.timeout(120_000);
  let t: TestServer;
  afterEach(async () => t?.close());

  async function levelsOf(name: string): Promise<string[]> {
    const res = await request(`${t.managementUrl}/models/${name}`);
    assert.equal(res.status, 200, res.text);
    return res.body.workers.map((w: { graphOptimizationLevel: string }) => w.graphOptimizationLevel);
  }

  async function load(name: string, bytes: Uint8Array, extra: Record<string, unknown> = {}) {
    const res = await loadModel(t, name, writeModelDir(t.store, name, bytes), extra);
    assert.equal(res.status, 200, res.text);
  }

  it('by default a tiny MLP gets basic in a shared host, PaddleOCR (471 nodes) all in a shared host and a dedicated worker', async () => {
    t = await startTestServer('worker_mode=shared\nshared_workers=1\nmodel_cache=off');
    const paddle = fs.readFileSync(paddleOcrClsPath());
    await load('tiny', mlpModel({ sizes: [16, 32, 4] }));
    await load('ocr', paddle);
    await load('ocr-own', paddle, { worker_mode: 'dedicated' });
    assert.deepEqual(await levelsOf('tiny'), ['basic']);
    assert.deepEqual(await levelsOf('ocr'), ['all']);
    assert.deepEqual(await levelsOf('ocr-own'), ['all']);
  });

  for (const level of ['all', 'basic'] as const)
    it(`onnx_graph_optimization_level=${level} is what every model gets`, async () => {
      t = await startTestServer(
        `worker_mode=shared\nshared_workers=1\nmodel_cache=off\nonnx_graph_optimization_level=${level}`,
      );
      await load('tiny', mlpModel({ sizes: [16, 32, 4] }));
      await load('ocr', fs.readFileSync(paddleOcrClsPath()), { worker_mode: 'dedicated' });
      assert.deepEqual(await levelsOf('tiny'), [level]);
      assert.deepEqual(await levelsOf('ocr'), [level]);
    });
});
