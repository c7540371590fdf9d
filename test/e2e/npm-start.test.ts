/**
 * `npm start` as a supervisor or a script runs it: SIGTERM goes to the process `npm start` is, and
 * the server must get it (package.json's start script `exec`s node, so npm forwards the signal to
 * the server itself, not to a shell that would die and leave the server running).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { descendantsOf, isAlive, waitFor } from '../../harness/process-probes';
import { tempDir } from '../../harness/test-server';

// Compiled to dist/test/e2e/, so the repo root is three levels up.
const kRoot = path.resolve(__dirname, '../../..');

function portIsFree(port: number): Promise<boolean> {
  const srv = net.createServer();
  return new Promise((resolve) => {
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

describe('npm start and SIGTERM', () => {
  it('SIGTERM to the process `npm start` started stops the server: the port is free and no worker is left', async function () {
    // npm start builds first (tsc -b: nothing to do when dist/ is current).
    this.timeout(180_000);
    const config = path.join(tempDir('mme-npm-start-'), 'config.properties');
    fs.writeFileSync(
      config,
      [
        'inference_address=http://127.0.0.1:0',
        'management_address=http://127.0.0.1:0',
        'model_store=model-store',
        'load_models=mlp',
        'default_workers_per_model=1',
      ].join('\n'),
    );
    const npm = spawn('npm', ['start', '--', '--mms-config', config], {
      cwd: kRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(npm, 'exit');
    const lines: string[] = [];
    readline.createInterface({ input: npm.stderr }).on('line', (l) => lines.push(l));
    readline.createInterface({ input: npm.stdout }).on('line', (l) => lines.push(l));
    await waitFor(() => lines.some((l) => /ready in/.test(l)), 'the ready line', 150_000, 100);
    const port = Number(/API listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(lines.join('\n'))?.[1]);
    const processes = descendantsOf(npm.pid!);
    assert.ok(processes.length >= 2, `the server and its worker run under npm: ${processes.join(', ')}`);
    assert.equal(await portIsFree(port), false, 'the server listens');

    npm.kill('SIGTERM');
    await exited;
    try {
      await waitFor(
        () => processes.every((pid) => !isAlive(pid)),
        `the server and its workers (${processes.join(', ')}) to exit`,
        30_000,
        50,
      );
    } finally {
      // Whatever the verdict, nothing this test started outlives it.
      for (const pid of processes.filter(isAlive)) process.kill(pid, 'SIGKILL');
    }
    assert.equal(await portIsFree(port), true, `port ${port} is free`);
    assert.ok(
      lines.some((l) => /SIGTERM: draining/.test(l)),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => /stopped: 0 requests finished in the drain/.test(l)),
      lines.join('\n'),
    );
  });
});
