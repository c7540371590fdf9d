/**
 * A fleet bench's router binary (nginx, haproxy), installed from Debian's package of the same name
 * when missing and this runs as root with apt-get; anywhere else an error saying how to get it.
 * Never called from a test: tests skip instead (harness/routers/router-process.ts finds the binary).
 */
import { spawnSync } from 'node:child_process';
import { findProgram } from '../../../harness/routers/router-process';
import { UsageError } from '../../cli-flags';

export function requireProgram(name: string): string {
  const found = findProgram(name);
  if (found) return found;
  const apt = findProgram('apt-get');
  if (apt && process.getuid?.() === 0) {
    process.stderr.write(`${name} is missing: apt-get install ${name}\n`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () =>
      spawnSync(apt, ['install', '-y', '-qq', '--no-install-recommends', name], { stdio: 'inherit', env }).status;
    // A fresh machine may have no package lists yet.
    if (install() !== 0 && spawnSync(apt, ['update', '-qq'], { stdio: 'inherit', env }).status === 0) install();
    const installed = findProgram(name);
    if (installed) return installed;
  }
  throw new UsageError(
    `${name} is not installed (looked in /usr/sbin, /usr/local/sbin and PATH) and this is not root with apt-get; install it, e.g. \`sudo apt-get install ${name}\` on Debian or Ubuntu, and run again`,
  );
}
