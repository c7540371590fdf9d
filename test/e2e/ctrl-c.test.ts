/**
 * Ctrl-C in a terminal: the terminal signals the whole foreground process group, and `npm start`
 * forwards the signal again a few milliseconds later. The server must take that as one press and
 * drain; its workers, in their own groups, must not take the signal and drop the request they run.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCliServer } from '../../harness/cli-server';
import { holdingHandler } from '../../harness/fault-handlers';
import { loadModel, request } from '../../harness/http-requests';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { tempDir } from '../../harness/test-server';

describe('Ctrl-C', () => {
  it('SIGINT twice to the process group within a few ms: one drain, the running request answers, exit 0 and "stopped"', async function () {
    this.timeout(120_000);
    const dir = tempDir('mme-ctrl-c-');
    const [log, release] = [path.join(dir, 'handled'), path.join(dir, 'release')];
    const store = tempDir('mme-store-');
    // setsid: the server leads a process group of its own, as a shell's foreground job does.
    const s = await startCliServer('', { store, launcher: ['setsid'] });
    const loaded = await loadModel(
      s,
      'held',
      writeModelDir(store, 'held', addModel(), { 'handler.js': holdingHandler(log, release) }),
    );
    assert.equal(loaded.status, 200, loaded.text);
    const [worker] = workerPidsOf(s.pid);
    const running = request(`${s.url}/models/held/invoke`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', 'x-test-tag': 'running' },
    });
    await waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('running'), 'the request to run');
    process.kill(-s.pid, 'SIGINT');
    process.kill(-s.pid, 'SIGINT');
    await waitFor(() => s.lines.some((l) => /SIGINT: draining/.test(l)), 'the drain to start');
    fs.writeFileSync(release, '');
    const answer = await running;
    assert.equal(answer.status, 200, answer.text);
    const { code } = await s.exited;
    const lines = s.lines.join('\n');
    assert.equal(code, 0, lines);
    assert.doesNotMatch(lines, /again: exiting now/);
    assert.match(lines, /stopped: 1 requests finished in the drain, 0 cut off/);
    assert.doesNotMatch(lines, new RegExp(`pid ${worker}\\).*(SIGINT|exited)`), 'the worker took no signal');
  });
});
