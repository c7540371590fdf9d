/**
 * log_format and log_level on a real server process: JSON lines a collector can parse, with the
 * context fields of each event, the worker processes' own output among them; and the level filter.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { behaviourHandler } from '../../harness/fault-handlers';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { freePort, kMain, withCliServer } from '../../harness/cli-server';
import { waitFor } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { tempDir, testProperties } from '../../harness/test-server';
import { kRepoRoot } from '../helpers/docs-examples';

const kModel = mlpModel({ sizes: [2, 2, 1], seed: 1 });
/** A handler that writes to its stdout while loading: a worker's output line. */
const kGreeter = `exports.initialize = () => console.log('greeter handler initialised');
exports.handle = async (requests) => requests.map(() => '{}');
`;

interface JsonLine {
  ts: string;
  level: string;
  msg: string;
  model?: string;
  requestId?: string;
  worker?: string;
  pid?: number;
}

describe('server log (log_format, log_level)', () => {
  it("log_format=json: every line is a JSON object with ts, level, msg and the event's model, request id, worker and pid", async () => {
    let serverPid = 0;
    let requestId = '';
    const lines = await withCliServer('log_format=json\naccess_log=true', async (s, store) => {
      serverPid = s.pid;
      assert.equal(
        (await loadModel(s, 'greeter', writeModelDir(store, 'greeter', kModel, { 'handler.js': kGreeter }))).status,
        200,
      );
      const answer = await invoke(s, 'greeter', {});
      assert.equal(answer.status, 200);
      requestId = answer.headers.get('x-request-id')!;
      assert.equal((await invoke(s, 'absent', {})).status, 404);
      await s.stop();
      return s.lines;
    });
    const parsed = lines.map((l) => {
      try {
        return JSON.parse(l) as JsonLine;
      } catch {
        throw new Error(`not a JSON line: ${l}`);
      }
    });
    for (const p of parsed) {
      assert.ok(!Number.isNaN(Date.parse(p.ts)) && p.ts.endsWith('Z'), `ISO time in ${JSON.stringify(p)}`);
      assert.ok(['info', 'warn', 'error'].includes(p.level), `level in ${JSON.stringify(p)}`);
      assert.equal(typeof p.msg, 'string');
    }
    const find = (re: RegExp) => {
      const hit = parsed.find((p) => re.test(p.msg));
      assert.ok(hit, `a line matching ${re} in:\n${lines.join('\n')}`);
      return hit;
    };
    assert.match(find(/^sagemaker-mme-node \d+\.\d+\.\d+/).msg, /Node v\d+/);
    find(/^ready in \d+ ms/);
    const loaded = find(/^\[greeter\] loaded from/);
    assert.equal(loaded.model, 'greeter');
    // docs/troubleshooting.md points at this line for a model's memory figure, in the form users see.
    const form = /`(\[name\] loaded [^`]*MB)`/.exec(
      fs.readFileSync(path.join(kRepoRoot, 'docs/troubleshooting.md'), 'utf8'),
    );
    assert.ok(form, 'troubleshooting.md names the loaded line');
    const pattern = form[1]
      .replace(/[[\]]/g, '\\$&')
      .replace('name', 'greeter')
      .replace(' … ', ' .*')
      .replace('N', '[\\d.]+');
    assert.match(loaded.msg, new RegExp(`^${pattern}$`));
    const output = find(/greeter handler initialised/);
    assert.match(output.worker ?? '', /^greeter-w\d+$/);
    assert.ok(Number.isInteger(output.pid) && output.pid !== serverPid, "the worker's own pid");
    const access = find(/^ACCESS .*POST \/models\/greeter\/invoke/);
    assert.equal(access.requestId, requestId);
    const notFound = find(/^request \S+ POST .*: 404 /);
    assert.equal(notFound.level, 'info', "a client's mistake is not the server's error");
    assert.ok(notFound.requestId, 'the error line carries its request id');
    assert.doesNotMatch(notFound.msg, /absent/, 'client text stays out of error lines');
    const stopped = find(/^stopped: /);
    assert.match(stopped.msg, /^stopped: 0 requests finished in the drain, 0 cut off/);
    assert.equal(stopped.level, 'info');
  });

  it('log_level=warn writes warnings and errors only (a worker crash), no start-up or load lines', async () => {
    const store = tempDir('mme-store-');
    const port = await freePort();
    const config = path.join(tempDir('mme-config-'), 'config.properties');
    // The listening line is info, so the test knows the port instead of reading it from the log.
    fs.writeFileSync(
      config,
      `${testProperties(store, `log_level=warn\ninference_address=http://127.0.0.1:${port}\nmanagement_address=http://127.0.0.1:${port}`)}\n`,
    );
    const child = spawn(process.execPath, [kMain, 'serve', '--mms-config', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit');
    const lines: string[] = [];
    for (const stream of [child.stdout, child.stderr])
      readline.createInterface({ input: stream }).on('line', (l) => lines.push(l));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitFor(
        async () => (await request(`${url}/ping`).catch(() => null))?.status === 200,
        'the server to answer /ping',
        60_000,
      );
      assert.equal(
        (
          await loadModel(
            { managementUrl: url },
            'crashy',
            writeModelDir(store, 'crashy', kModel, { 'handler.js': behaviourHandler }),
          )
        ).status,
        200,
      );
      assert.ok((await invoke({ url }, 'crashy', { exit: 1 })).status >= 500);
      await waitFor(() => lines.some((l) => /restarting/.test(l)), 'the worker restart line');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    assert.ok(lines.length > 0);
    for (const l of lines) assert.match(l, /^\S+Z (WARN |ERROR) /, `only warnings and errors: ${l}`);
    assert.ok(
      lines.some((l) => /^\S+Z WARN  \[crashy\] worker crashy-w\d+ \(pid \d+\) exited with code 1; restarting/.test(l)),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => /^\S+Z ERROR request \S+ POST .*: 5\d\d /.test(l)),
      lines.join('\n'),
    );
  });
});
