/**
 * examples/: each client runs as its README says against a real server holding the example `mlp`,
 * and exits 0 having printed every answer. The Python one runs when python3 can import requests.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { startCliServer, type CliServer } from '../../harness/cli-server';
import { waitFor } from '../../harness/process-probes';
import { request } from '../../harness/http-requests';
import { runCommand } from '../../harness/run-command';
import { skipBecause } from '../helpers/skip';

const kRoot = path.resolve(__dirname, '../../..');

/** The example's exit code and everything it printed. */
async function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const r = await runCommand(cmd, args, { cwd: kRoot, timeoutMs: 120_000 });
  return { code: r.code, out: `${r.stdout}${r.stderr}` };
}

describe('examples/: client examples against a real server', () => {
  let s: CliServer;
  before(async () => {
    s = await startCliServer('load_models=mlp', { store: path.join(kRoot, 'model-store') });
    await waitFor(async () => (await request(`${s.url}/models/mlp`)).status === 200, 'mlp to load', 60_000, 100);
  });
  after(() => s?.stop());

  it('invoke.py (Python requests: JSON, CSV, .npy, OIP v2)', async function () {
    if (spawnSync('python3', ['-c', 'import requests']).status !== 0)
      skipBecause(this, 'python-requests', 'python3 cannot import requests (Debian: apt-get install python3-requests)');
    const r = await run('python3', ['examples/invoke.py', s.url]);
    assert.equal(r.code, 0, r.out);
    for (const label of ['json:', 'csv:', 'npy:', 'v2:']) assert.match(r.out, new RegExp(`^${label}`, 'm'), r.out);
  });

  it('invoke.sh (curl)', async () => {
    const r = await run('bash', ['examples/invoke.sh', s.url]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /"outputs"/);
  });

  it('invoke.mjs (Node fetch)', async () => {
    const r = await run(process.execPath, ['examples/invoke.mjs', s.url]);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^v2:/m);
  });
});
