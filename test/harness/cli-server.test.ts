import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { isAlive, waitFor } from '../../harness/process-probes';

describe('servers the test helpers start', function () {
  this.timeout(60_000);

  it('die with the test run that started them, even one killed by SIGKILL', async () => {
    // A stand-in for an interrupted mocha run: it starts a CLI server through the helper, reports its pid and waits.
    const helper = path.join(__dirname, '..', '..', 'harness', 'cli-server.js');
    const runner = spawn(
      process.execPath,
      [
        '-e',
        `require(${JSON.stringify(helper)}).startCliServer('').then((s) => console.log('server ' + s.pid), (e) => { console.error(e); process.exit(1); }); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const pid = await new Promise<number>((resolve, reject) => {
      readline.createInterface({ input: runner.stdout }).on('line', (l) => {
        const m = /^server (\d+)$/.exec(l);
        if (m) resolve(Number(m[1]));
      });
      runner.once('exit', (code) => reject(new Error(`the runner exited with ${code} before its server started`)));
    });
    assert.ok(isAlive(pid));
    runner.kill('SIGKILL');
    await waitFor(() => !isAlive(pid), 'the server to die with the run that started it', 20_000);
  });
});
