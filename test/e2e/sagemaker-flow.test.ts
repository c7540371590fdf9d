/**
 * The server as SageMaker runs it: a separate process started from the CLI with a config file,
 * driven through the MME flow load → list → invoke → unload → invoke(404).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { mlpForward, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { freePort, kMain, startCli } from '../../harness/cli-server';
import { isAlive, waitFor, workerPidsOf } from '../../harness/process-probes';
import { request } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';
import { assertRowsClose } from '../helpers/assert-close';

describe('the CLI server (npm start -- --mms-config FILE)', () => {
  const spec = { sizes: [4, 8, 3], seed: 3 };
  let dir: string;
  let configFile: string;
  before(() => {
    dir = tempDir();
    writeModelDir(dir, 'tenant-a', mlpModel(spec));
    configFile = path.join(dir, 'config.properties');
    fs.writeFileSync(
      configFile,
      [
        'inference_address=http://127.0.0.1:$$TEST_PORT$$',
        'management_address=http://127.0.0.1:$$TEST_PORT$$',
        `model_store=${dir}`,
        'default_workers_per_model=1',
      ].join('\n'),
    );
  });

  it('runs the SageMaker flow: load → list → invoke → unload → invoke is 404', async () => {
    const s = await startCli(['--mms-config', configFile], { env: { TEST_PORT: '0' } });
    try {
      const url = path.join(dir, 'tenant-a');
      const load = await request(`${s.url}/models`, {
        method: 'POST',
        json: { model_name: 'a1b2c3', url },
        headers: { 'X-Amzn-SageMaker-Target-Model': 'tenant-a.tar.gz' },
      });
      assert.equal(load.status, 200, load.text);
      assert.deepEqual((await request(`${s.url}/models`)).body, { models: [{ modelName: 'a1b2c3', modelUrl: url }] });
      const rows = [[1, 2, 3, 4]];
      const inv = await request(`${s.url}/models/a1b2c3/invoke`, { method: 'POST', json: rows });
      assert.equal(inv.status, 200);
      assertRowsClose(inv.body, mlpForward(spec, rows));
      assert.equal((await request(`${s.url}/models/a1b2c3`, { method: 'DELETE' })).status, 200);
      assert.equal((await request(`${s.url}/models/a1b2c3/invoke`, { method: 'POST', json: rows })).status, 404);
    } finally {
      await s.stop();
    }
  });

  it('overrides the port of both addresses with SAGEMAKER_BIND_TO_PORT', async () => {
    const port = await freePort();
    const s = await startCli(['--mms-config', configFile], {
      env: { TEST_PORT: '1', SAGEMAKER_BIND_TO_PORT: String(port) },
    });
    try {
      assert.equal(s.url, `http://127.0.0.1:${port}`);
      assert.equal((await request(`${s.url}/ping`)).status, 200);
      assert.equal((await request(`${s.url}/models`)).status, 200, 'management answers on the same port');
    } finally {
      await s.stop();
    }
  });

  it('loads --models at start-up from --model-store', async () => {
    const s = await startCli(['--mms-config', configFile, '--model-store', dir, '--models', 'tenant-a'], {
      env: { TEST_PORT: '0' },
    });
    try {
      await waitFor(
        async () => (await request(`${s.url}/models`)).body.models.length === 1,
        'the startup model to load',
      );
      const inv = await request(`${s.url}/models/tenant-a/invoke`, { method: 'POST', json: [[0, 0, 0, 0]] });
      assert.equal(inv.status, 200);
    } finally {
      await s.stop();
    }
  });

  it('refuses to start, naming the variable, when a $$VAR$$ is not set', async () => {
    const child = spawn(process.execPath, [kMain, '--mms-config', configFile], {
      env: { PATH: process.env.PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const [code] = await once(child, 'exit');
    assert.equal(code, 1);
    assert.match(stderr, /TEST_PORT/);
  });

  it('T-F5 parent_sigkill_no_orphans: leaves no worker behind when the server itself is SIGKILLed', async () => {
    const s = await startCli(['--mms-config', configFile], { env: { TEST_PORT: '0' } });
    const load = await request(`${s.url}/models`, {
      method: 'POST',
      json: { model_name: 'm', url: path.join(dir, 'tenant-a'), initial_workers: 2 },
    });
    assert.equal(load.status, 200);
    const pids = workerPidsOf(s.child.pid!);
    assert.ok(pids.length >= 2, `${pids.length} workers (two for the model, plus the spare)`);
    s.child.kill('SIGKILL');
    await once(s.child, 'exit');
    // No bound in the spec beyond "no orphans": a generous wait, so a loaded machine does not fail it.
    await waitFor(() => pids.every((p) => !isAlive(p)), 'workers to exit after their parent was killed', 30_000);
  });

  it('stops every worker and exits 0 on SIGTERM', async () => {
    const s = await startCli(['--mms-config', configFile], { env: { TEST_PORT: '0' } });
    assert.equal(
      (await request(`${s.url}/models`, { method: 'POST', json: { model_name: 'm', url: path.join(dir, 'tenant-a') } }))
        .status,
      200,
    );
    const pids = workerPidsOf(s.child.pid!);
    s.child.kill('SIGTERM');
    const [code] = await once(s.child, 'exit');
    assert.equal(code, 0);
    assert.ok(pids.every((p) => !isAlive(p)));
  });
});
