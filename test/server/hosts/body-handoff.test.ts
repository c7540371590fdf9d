/**
 * Large bodies through each worker's shared-memory ring, with real worker processes: every request
 * gets its own answer, a worker killed mid-request takes only its own requests with it, nothing is
 * ever left in the rings' directory, and where it cannot hold rings the bodies go over the sockets.
 * Every body takes the ring here (body_handoff_min_bytes=1); the directory is a plain temporary one
 * (body_handoff_dir accepts any), so the files can be watched.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { behaviourHandler } from '../../../harness/fault-handlers';
import { invoke, loadModel, request } from '../../../harness/http-requests';
import { addModel, writeModelDir } from '../../../harness/onnx-models';
import { waitFor } from '../../../harness/process-probes';
import { startTestServer, tempDir, type TestServer } from '../../../harness/test-server';

/** What the process `pid` has open in `dir` (its rings: unlinked, so named "(deleted)"). */
function openIn(pid: number | 'self', dir: string): string[] {
  return fs
    .readdirSync(`/proc/${pid}/fd`)
    .map((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    })
    .filter((target) => target.startsWith(dir));
}

describe('body handoff (request bodies through shared memory, real workers)', () => {
  let t: TestServer;
  let dir: string;

  async function load(name: string, extra: Record<string, unknown> = {}): Promise<void> {
    const res = await loadModel(
      t,
      name,
      writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler }),
      extra,
    );
    assert.equal(res.status, 200, res.text);
  }
  const workerPid = (name: string) => t.server.manager.registry.get(name).workers[0].pid;

  beforeEach(async () => {
    dir = tempDir('mme-rings-');
    t = await startTestServer(`body_handoff_dir=${dir}\nbody_handoff_min_bytes=1`);
  });
  afterEach(async () => {
    await t.close();
    assert.deepEqual(fs.readdirSync(dir), [], 'nothing left in the directory once the server is closed');
    assert.deepEqual(openIn('self', dir), [], 'no ring held open by the server once it is closed');
  });

  it('gives concurrent requests with distinct bodies their own answers, the bodies read from the ring', async () => {
    await load('m', { batch_size: 4, max_batch_delay: 50 });
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => invoke(t, 'm', { echo: `r${i}`, filler: 'x'.repeat(i * 997) })),
    );
    answers.forEach((a, i) => {
      assert.equal(a.status, 200, a.text);
      assert.equal((a.body as { echo: string }).echo, `r${i}`);
    });
    const pid = workerPid('m');
    const rings = openIn(pid, dir);
    assert.equal(rings.length, 1, 'the worker holds its ring');
    assert.match(rings[0], /\(deleted\)$/, 'unlinked while in use');
    assert.ok(fs.readFileSync(`/proc/${pid}/fd/4`).includes('"echo":"r11"'), 'the bodies went through the ring');
    assert.deepEqual(fs.readdirSync(dir), []);
  });

  it("loses only a SIGKILLed worker's own requests, serves the next one, and leaves no file behind", async () => {
    await Promise.all([load('a'), load('b')]);
    const barrier = path.join(tempDir('mme-barrier-'), 'open');
    const held = invoke(t, 'b', { barrier, echo: 'held' });
    await waitFor(() => t.server.manager.registry.get('b').inFlightRequests === 1, "b's request to reach its worker");
    const killed = await invoke(t, 'a', { kill: true });
    assert.ok(killed.status >= 500, `the killed worker's request fails: ${killed.status}`);
    fs.writeFileSync(barrier, '');
    const b = await held;
    assert.equal(b.status, 200, b.text);
    assert.equal((b.body as { echo: string }).echo, 'held');
    const after = await invoke(t, 'a', { echo: 'after' });
    assert.equal(after.status, 200, after.text);
    assert.equal((after.body as { echo: string }).echo, 'after');
    assert.deepEqual(fs.readdirSync(dir), []);
    // The dead worker's ring is closed; the restarted worker and b's hold one each.
    await waitFor(() => openIn('self', dir).length === 2, 'the server to hold one ring per live worker');
  });

  it("closes a worker's ring when its model is unloaded", async () => {
    await load('u');
    assert.equal((await invoke(t, 'u', { echo: 1 })).status, 200);
    assert.equal(openIn('self', dir).length, 1);
    const res = await request(`${t.managementUrl}/models/u`, { method: 'DELETE' });
    assert.equal(res.status, 200, res.text);
    await waitFor(() => openIn('self', dir).length === 0, 'the ring to be closed');
  });
});

describe('body handoff fallback', () => {
  it('sends bodies over the sockets, saying so once, when the directory cannot hold rings', async () => {
    const notADir = path.join(tempDir('mme-rings-'), 'file');
    fs.writeFileSync(notADir, '');
    const t = await startTestServer(`body_handoff_dir=${notADir}\nbody_handoff_min_bytes=1`);
    try {
      const name = 'f';
      const res = await loadModel(
        t,
        name,
        writeModelDir(t.store, name, addModel(), { 'handler.js': behaviourHandler }),
      );
      assert.equal(res.status, 200, res.text);
      const answers = await Promise.all([1, 2, 3].map((i) => invoke(t, name, { echo: i })));
      for (const a of answers) assert.equal(a.status, 200, a.text);
      const said = t.logs.filter((l) => l.includes('over their sockets'));
      assert.equal(said.length, 1, t.logs.join('\n'));
      assert.match(said[0], /--shm-size/);
      assert.deepEqual(openIn(t.server.manager.registry.get(name).workers[0].pid, notADir), []);
    } finally {
      await t.close();
    }
  });
});
