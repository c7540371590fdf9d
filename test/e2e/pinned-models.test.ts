/**
 * pinned and eviction_priority on a real server with real workers (model_cache=on,
 * max_loaded_models=2): a pinned model survives loads that evict every other one, GET /models and
 * describe show it, a load that would fit only by evicting pinned models is 507 naming them, and
 * DELETE is what unloads a pinned model.
 */
import assert from 'node:assert/strict';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';

describe('pinned models and eviction_priority (real server, real workers)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer('model_cache=on\nmax_loaded_models=2\neviction_policy=lru');
  });
  after(() => t?.close());

  it('keeps a pinned model through loads that evict the others, shows it, and answers 507 naming the pinned models that hold the room', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    assert.equal((await loadModel(t, 'p', dir, { pinned: true, eviction_priority: 'high' })).status, 200);
    for (const name of ['a', 'b', 'c']) assert.equal((await loadModel(t, name, dir)).status, 200, name);
    const listed = (await request(`${t.url}/models`)).body.models;
    assert.deepEqual(listed, [
      { modelName: 'c', modelUrl: dir },
      { modelName: 'p', modelUrl: dir, pinned: true },
    ]);
    const described = (await request(`${t.url}/models/p`)).body;
    assert.equal(described.pinned, true);
    assert.equal(described.evictionPriority, 'high');
    assert.equal((await request(`${t.url}/models/c`)).body.evictionPriority, 'normal');

    const q = await request(`${t.url}/models?model_name=q&url=${encodeURIComponent(dir)}&pinned=true`, {
      method: 'POST',
    });
    assert.equal(q.status, 200, q.text);
    const refused = await loadModel(t, 'r', dir);
    assert.equal(refused.status, 507, refused.text);
    assert.match(
      refused.body.message,
      /^Model r does not fit: 2 models are loaded and max_loaded_models is 2, and only evicting pinned models would make room, which the cache never does: (p, q|q, p) \(2 pinned, .* MB\)\. Unload one of them/,
    );
    assert.equal((await request(`${t.url}/models/r`)).status, 404);
    assert.equal((await request(`${t.url}/models/p`, { method: 'DELETE' })).status, 200);
    assert.equal((await loadModel(t, 'r', dir)).status, 200);
  });

  it('answers 400 for an eviction_priority or pinned it does not know, and loads nothing', async () => {
    const dir = writeModelDir(t.store, 'add', addModel());
    const bad = await loadModel(t, 'x', dir, { eviction_priority: 'urgent' });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.message, 'eviction_priority must be "low", "normal" or "high"; got "urgent".');
    assert.equal((await loadModel(t, 'x', dir, { pinned: 'yes' })).status, 400);
    assert.equal((await request(`${t.url}/models/x`)).status, 404);
  });
});
