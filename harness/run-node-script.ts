/** Runs one of the repository's compiled scripts (dist/scripts/…) as its own process, as `npm run` does. */
import { execFile } from 'node:child_process';
import path from 'node:path';

export interface ScriptRun {
  code: number;
  stdout: string;
  stderr: string;
}

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
  const merged = Object.fromEntries(
    Object.entries({ ...process.env, ...env }).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [`${kShipped[script] ?? path.join(kScripts, script)}.js`, ...args],
      { env: merged },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
      },
    );
  });
}
