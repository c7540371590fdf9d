/**
 * What the fleet's real routers (nginx, HAProxy) share as processes the bench and the tests start on
 * loopback: finding the binary and waiting until the router listens (the bench installs a missing one:
 * scripts/bench/fleet/require-program.ts).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** The program's binary (sbin directories first: Debian puts both routers there), or null when it is not installed. */
export function findProgram(name: string): string | null {
  for (const dir of ['/usr/sbin', '/usr/local/sbin', ...(process.env.PATH ?? '').split(':')]) {
    const bin = path.join(dir, name);
    if (fs.existsSync(bin)) return bin;
  }
  return null;
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
