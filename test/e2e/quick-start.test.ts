/**
 * The README's two commands and its quick tour, as written: `npm start`'s server (the repository's
 * own config.properties, from the repository root, with its relative model_store), only on free
 * ports instead of 8080 and 7070; then every command of the tour through bash, its output compared
 * with the `# ...` line the README shows under it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startCli, type CliServer } from '../../harness/cli-server';
import { waitFor } from '../../harness/process-probes';
import { request } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';
import { assertJsonClose } from '../helpers/assert-close';
import { bash, outputsShown, shownCommands } from '../helpers/docs-examples';

// Compiled to dist/test/e2e/, so the repo root is three levels up.
const kRoot = path.resolve(__dirname, '../../..');

/** The README's quick tour: its sh block. */
function tourBlock(): string {
  const readme = fs.readFileSync(path.join(kRoot, 'README.md'), 'utf8');
  const block = /## Quick tour[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'README.md has a "Quick tour" section with a sh block');
  return block[1];
}

describe('README quick start (npm start with the repository config.properties, from the repository root)', () => {
  let s: CliServer;
  after(() => s?.stop());

  before(async () => {
    const config = fs.readFileSync(path.join(kRoot, 'config.properties'), 'utf8').replace(/:8080\b/g, ':0');
    assert.match(config, /^model_store=model-store$/m, 'the repository config serves the relative model-store/');
    assert.match(config, /^grpc_inference_port=7070$/m, 'the repository config turns gRPC on, as the tour uses it');
    const file = path.join(tempDir('mme-quick-start-'), 'config.properties');
    fs.writeFileSync(file, config.replace(/^grpc_inference_port=7070$/m, 'grpc_inference_port=0'));
    s = await startCli(['--mms-config', file], { cwd: kRoot });
  });

  it('loads the four example models of model-store/ from the relative model_store', async () => {
    const examples = fs
      .readdirSync(path.join(kRoot, 'model-store'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    assert.equal(examples.length, 4, 'the README says four example models load');
    await waitFor(
      async () => (await request(`${s.url}/models`)).body.models.length === examples.length,
      `the ${examples.length} example models to load`,
      60_000,
      100,
    );
    assert.deepEqual(
      (await request(`${s.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName),
      examples,
    );
    assert.ok(!s.lines.some((l) => /failed to load/.test(l)), s.lines.join('\n'));
  });

  it('answers every command of the quick tour as the README shows', async () => {
    const grpc = s.lines.map((l) => /gRPC .*listening on (\S+)/.exec(l)?.[1]).find(Boolean);
    assert.ok(grpc, `the server reports its gRPC listener:\n${s.lines.join('\n')}`);
    const http = s.url.replace(/^http:\/\//, '').replace(/\/$/, '');
    const block = tourBlock();
    const commands = shownCommands(block);
    assert.ok(commands.length >= 8, `the tour has its commands (found ${commands.length})`);
    let compared = 0;
    for (const { command, shown } of commands) {
      const run = await bash(
        command
          .replaceAll('127.0.0.1:8080', http)
          .replaceAll('127.0.0.1:7070', grpc)
          .replace(/^curl /, 'curl -sS --fail-with-body '),
        kRoot,
      );
      assert.equal(run.code, 0, `${command}\nexit ${run.code}\n${run.stdout}\n${run.stderr}`);
      // Numbers to 1e-6: onnxruntime's kernels on another CPU may round the last float32 bit differently.
      if (shown === null) continue;
      assertJsonClose(JSON.parse(run.stdout), JSON.parse(shown), command);
      compared++;
    }
    assert.equal(compared, outputsShown([block]), 'every output the tour shows was compared with its answer');
  });
});
