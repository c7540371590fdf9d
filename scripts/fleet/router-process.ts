/**
 * What the fleet's real routers (nginx, HAProxy) share as processes the bench and the tests start on
 * loopback: finding the binary, installing it from Debian's package for the bench, and waiting until
 * the router listens.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { UsageError } from '../cli-flags';

/** The program's binary (sbin directories first: Debian puts both routers there), or null when it is not installed. */
export function findProgram(name: string): string | null {
  for (const dir of ['/usr/sbin', '/usr/local/sbin', ...(process.env.PATH ?? '').split(':')]) {
    const bin = path.join(dir, name);
    if (fs.existsSync(bin)) return bin;
  }
  return null;
}

/**
 * The program's binary for a bench, installed from Debian's package of the same name when missing
 * and this runs as root with apt-get (as `npm test`'s set-up does); anywhere else an error saying how
 * to get it. Never called from a test: tests skip instead.
 */
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

/** Resolves once something accepts connections on the port (neither router writes a ready line of its own). */
export async function listening(port: number, child: ChildProcess, name: string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}
