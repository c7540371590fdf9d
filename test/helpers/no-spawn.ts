/**
 * Preloaded (node --require) into a script under test to prove it starts no process: every way of
 * starting one reports itself on stderr and throws, so a script that begins its work fails loudly.
 */
import childProcess from 'node:child_process';

for (const name of ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync'] as const) {
  Object.defineProperty(childProcess, name, {
    value: (command: string) => {
      process.stderr.write(`started a process: ${name}(${command})\n`);
      throw new Error(`${name} called while the script should only print its usage`);
    },
  });
}
