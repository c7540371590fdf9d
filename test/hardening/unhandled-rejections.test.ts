/**
 * Issue 21: a promise rejection nobody handles is logged with its request id and ends the process
 * with its own exit code, which the server names when a worker ends that way. That none happens in
 * the whole suite is checked by the root hook (test/helpers/root-hooks.ts), in this process and in
 * every worker the in-process servers start.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { UNHANDLED_REJECTION_EXIT_CODE } from '../../src/unhandled-rejection';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { kMain } from '../../harness/cli-server';
import { waitFor } from '../../harness/process-probes';
import { expectUnhandledRejectionExit } from '../helpers/root-hooks';
import { invoke, loadModel } from '../../harness/http-requests';
import { startTestServer, tempDir, testProperties } from '../../harness/test-server';

/** Body {"reject": true}: leaves a rejection unhandled that carries the request's id, and never answers. */
const rejects = `exports.handle = async (requests, ctx) => {
  if (JSON.parse(requests[0].body.toString()).reject) {
    Promise.reject(Object.assign(new Error('left unhandled on purpose'), { requestId: ctx.getRequestId(0) }));
    await new Promise(() => undefined);
  }
  return requests.map(() => '{}');
};
`;

const kRejectsLater = `setTimeout(() => {
  const { forRequest } = require(${JSON.stringify(path.join(path.dirname(kMain), 'unhandled-rejection.js'))});
  forRequest(Promise.reject(new Error('left unhandled on purpose')), 'req-42');
}, 200);
`;

describe('unhandled rejections: logged with the request id, a distinct exit code (issue 21)', function () {
  this.timeout(120_000);

  it('a worker that leaves a rejection unhandled exits with its own code; the server names it, fails the request it was running with 500, and restarts it', async () => {
    const t = await startTestServer();
    try {
      const dir = writeModelDir(t.store, 'rejects', addModel(), { 'handler.js': rejects });
      assert.equal((await loadModel(t, 'rejects', dir)).status, 200);
      expectUnhandledRejectionExit();
      const res = await invoke(t, 'rejects', { reject: true });
      assert.equal(res.status, 500, res.text);
      assert.equal(res.body.errorCode, 'MME_ERR_WORKER_DIED');
      assert.match(res.body.message, /exited on a promise rejection nobody handled \(code 71/);
      const requestId = res.headers.get('x-request-id')!;
      // The worker's stderr reaches the server's log through a pipe, maybe after the answer: waited for.
      await waitFor(
        () =>
          t.logs.some((l) =>
            l.includes(`unhandled promise rejection (request ${requestId}): Error: left unhandled on purpose`),
          ),
        'the worker to log the rejection with the request id',
      );
      await waitFor(
        () => t.logs.some((l) => /restarting \(exit reason: unhandled-rejection\)/.test(l)),
        'the server to name the exit',
      );
      await waitFor(
        async () => (await invoke(t, 'rejects', {})).status === 200,
        'the restarted worker to answer',
        60_000,
      );
    } finally {
      await t.close();
    }
  });

  it('the server process logs an unhandled rejection with its request id and exits with its own code', async () => {
    const dir = tempDir();
    const preload = path.join(dir, 'rejects-later.js');
    fs.writeFileSync(preload, kRejectsLater);
    const config = path.join(dir, 'config.properties');
    fs.writeFileSync(config, testProperties(tempDir('mme-store-')));
    const child = spawn(process.execPath, ['--require', preload, kMain, 'serve', '--mms-config', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    // 'close', not 'exit': the exit can come before the last of stdout and stderr has been read.
    const [code] = (await once(child, 'close')) as [number | null];
    assert.equal(code, UNHANDLED_REJECTION_EXIT_CODE, output);
    assert.match(output, /unhandled promise rejection \(request req-42\): Error: left unhandled on purpose/);
    assert.match(output, /exiting with code 71/);
  });
});
