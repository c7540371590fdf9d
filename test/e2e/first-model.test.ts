/**
 * docs/first-model.md as written: every `sh` block, in page order, run through bash from a copy of
 * the repository's model store (so the page's mkdir and handler.js land in a scratch directory),
 * against `npm start`'s configuration on free ports; each `# {…}` line is compared with the answer
 * of the command above it (an error answer: curl exits 22 and prints it). The page's `shell` blocks (image, SageMaker) are not run here.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startCli, type CliServer } from '../../harness/cli-server';
import { bash, codeBlocks, kRepoRoot, outputsShown, shownCommands } from '../helpers/docs-examples';
import { waitFor } from '../../harness/process-probes';
import { request } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';
import { skipBecause } from '../helpers/skip';

describe("docs/first-model.md (npm start's configuration, every sh block as written)", () => {
  let s: CliServer;
  let root: string;
  after(() => s?.stop());

  before(async () => {
    root = tempDir('mme-first-model-');
    fs.cpSync(path.join(kRepoRoot, 'model-store'), path.join(root, 'model-store'), { recursive: true });
    const config = fs
      .readFileSync(path.join(kRepoRoot, 'config.properties'), 'utf8')
      .replace(/:8080\b/g, ':0')
      .replace(/^grpc_inference_port=7070$/m, 'grpc_inference_port=0');
    fs.writeFileSync(path.join(root, 'config.properties'), config);
    // From the scratch root, as `npm start` runs from the repository root: the relative model_store is its model-store/.
    s = await startCli(['--mms-config', path.join(root, 'config.properties')], { cwd: root });
    const examples = fs.readdirSync(path.join(kRepoRoot, 'model-store')).length;
    await waitFor(
      async () => (await request(`${s.url}/models`)).body.models.length === examples,
      'the example models (load_models=ALL)',
    );
  });

  it('answers every command of the page as it shows', async function () {
    this.timeout(180_000);
    if (spawnSync('python3', ['-c', 'import numpy']).status !== 0)
      skipBecause(this, 'python-numpy', "python3 cannot import numpy, which the page's .npy example runs");
    const grpc = s.lines.map((l) => /gRPC .*listening on (\S+)/.exec(l)?.[1]).find(Boolean);
    assert.ok(grpc, s.lines.join('\n'));
    const http = s.url.replace(/^http:\/\//, '').replace(/\/$/, '');
    const blocks = codeBlocks('docs/first-model.md', 'sh');
    const commands = blocks.flatMap(shownCommands);
    assert.ok(commands.length >= 12, `the page has its commands (found ${commands.length})`);
    let compared = 0;
    for (const { command, shown } of commands) {
      const line = command
        .replaceAll('127.0.0.1:8080', http)
        .replaceAll('127.0.0.1:7070', grpc)
        .replace(/^npm run -s mme-client --/, `node ${path.join(kRepoRoot, 'dist/src/cli/mme-client.js')}`)
        .replace(/^curl /, 'curl -sS --fail-with-body ');
      const run = await bash(line, root);
      const expected: unknown = shown === null ? null : JSON.parse(shown);
      // A shown error answer: curl --fail-with-body prints it and exits 22.
      const refused = typeof (expected as { code?: unknown } | null)?.code === 'number';
      assert.equal(run.code, refused ? 22 : 0, `${command}\nexit ${run.code}\n${run.stdout}\n${run.stderr}`);
      if (shown === null) continue;
      assert.deepEqual(JSON.parse(run.stdout), expected, command);
      compared++;
    }
    assert.equal(compared, outputsShown(blocks), 'every output the page shows was compared with its answer');
    // What the page leaves in the repository is ignored by git there.
    const ignored = await bash('git check-ignore model-store/mymodel/model.onnx rows.npy out.npy', kRepoRoot);
    assert.equal(ignored.code, 0, ignored.stdout + ignored.stderr);
    assert.match(
      fs.readFileSync(path.join(root, 'model-store', 'mymodel', 'handler.js'), 'utf8'),
      /exports\.postprocess/,
    );
  });
});
