/** Runs a command as a process of its own to completion and keeps what it printed: the one child-process runner of the tests. */
import { execFile } from 'node:child_process';

export interface CommandRun {
  /** The exit code, or -1 when the command did not exit with one (not found, killed at the bound, a signal). */
  code: number;
  stdout: string;
  /** What the command wrote to stderr, followed by why it did not exit with a code when it did not. */
  stderr: string;
}

export interface CommandOptions {
  cwd?: string;
  /** Added to this process's environment; an `undefined` removes the variable. */
  env?: Record<string, string | undefined>;
  /** Killed (SIGKILL) after this long; none by default. */
  timeoutMs?: number;
}

/** `cmd args` to completion; never rejects: callers look at the exit code. */
export function runCommand(cmd: string, args: readonly string[], options: CommandOptions = {}): Promise<CommandRun> {
  const env = Object.fromEntries(
    Object.entries({ ...process.env, ...options.env }).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd: options.cwd, env, timeout: options.timeoutMs ?? 0, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        const exited = !err || typeof err.code === 'number';
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
          stdout: String(stdout),
          stderr: exited ? String(stderr) : `${String(stderr)}\n${err.message}`,
        });
      },
    );
  });
}
