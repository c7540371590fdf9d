/**
 * docs/per-model-controls.md as written: every `sh` block, in page order, through bash against a
 * real server (model_cache=on, max_loaded_models=2, a model_store holding the example mlp model) on
 * a free port; each `# {…}` line is compared with the answer of the command above it (an error
 * answer: curl exits 22 and prints it), the measured megabytes of a 507 aside.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { withCliServer } from '../../harness/cli-server';
import { bash, codeBlocks, kRepoRoot, outputsShown, shownCommands } from '../helpers/docs-examples';

/** A model's measured memory differs from run to run: the page shows one run's figure. */
const anyMegabytes = (text: string) => text.replace(/\d+(\.\d+)? MB\)/g, 'N MB)');

describe('docs/per-model-controls.md (every sh block as written, on a real server)', () => {
  it('answers every command of the page as it shows', async function () {
    this.timeout(120_000);
    await withCliServer('model_cache=on\nmax_loaded_models=2', async (s, store) => {
      fs.cpSync(path.join(kRepoRoot, 'model-store', 'mlp'), path.join(store, 'mlp'), { recursive: true });
      const http = s.url.replace(/^http:\/\//, '').replace(/\/$/, '');
      const blocks = codeBlocks('docs/per-model-controls.md', 'sh');
      const commands = blocks.flatMap(shownCommands);
      assert.ok(commands.length >= 6, `the page has its commands (found ${commands.length})`);
      assert.equal(
        commands.filter((c) => c.shown !== null).length,
        outputsShown(blocks),
        'every shown output is compared',
      );
      for (const { command, shown } of commands) {
        const run = await bash(
          command.replaceAll('127.0.0.1:8080', http).replace(/^curl /, 'curl -sS --fail-with-body '),
          store,
        );
        const expected = shown === null ? null : (JSON.parse(anyMegabytes(shown)) as { code?: unknown });
        const refused = typeof expected?.code === 'number';
        assert.equal(run.code, refused ? 22 : 0, `${command}\nexit ${run.code}\n${run.stdout}\n${run.stderr}`);
        if (expected === null) continue;
        const answer = JSON.parse(anyMegabytes(run.stdout)) as Record<string, unknown>;
        // An error answer carries more than the page shows (its errorCode, the request id): the shown fields match.
        const compared = refused ? Object.fromEntries(Object.keys(expected).map((k) => [k, answer[k]])) : answer;
        assert.deepEqual(compared, expected, command);
      }
    });
  });
});
