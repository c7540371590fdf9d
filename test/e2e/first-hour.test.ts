/**
 * The first hour of a new user, run as they meet it: start-up mistakes as real processes whose
 * stderr is read, the ready line, and the refusals that must say what to change (issue 34).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { runCliToExit } from '../helpers/cli';
import { tempDir, testProperties } from '../helpers/server';

/** A start-up error as a user should meet it: exit 1, one line on stderr, no stack, never "listening". */
function assertOneLineStartError(run: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(run.stdout, /listening/, run.stdout);
}

describe('first hour: start-up mistakes', () => {
  for (const loadModels of ['load_models=ALL', '']) {
    it(`a model_store that does not exist is one line naming it${loadModels ? ` (${loadModels})` : ' (no load_models)'}`, async () => {
      const missing = path.join(tempDir('mme-store-'), 'no-such-dir');
      const run = await runCliToExit(testProperties(missing, loadModels));
      assertOneLineStartError(run, new RegExp(`^config key model_store: ${missing} does not exist; create it, or point model_store`));
    });
  }
});
