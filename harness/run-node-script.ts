/** Runs one of the repository's compiled scripts (dist/scripts/…) as its own process, as `npm run` does. */
import path from 'node:path';
import { type CommandRun, runCommand } from './run-command';

export type ScriptRun = CommandRun;

const kScripts = path.join(__dirname, '..', 'scripts');
/** Shipped clients live under src/cli/, not scripts/. */
const kShipped: Record<string, string> = { 'mme-client': path.join(__dirname, '..', 'src', 'cli', 'mme-client') };

/**
 * `script` is relative to scripts/ without extension, e.g. 'sagemaker/deploy'; an `undefined` in env
 * removes the variable. The exit code is returned, never thrown.
 */
export function runNodeScript(
  script: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<ScriptRun> {
  return runCommand(process.execPath, [`${kShipped[script] ?? path.join(kScripts, script)}.js`, ...args], { env });
}
