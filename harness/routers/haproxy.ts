/**
 * Real HAProxy (Debian's package, 2.6 or later) as the fleet's router on loopback, running
 * deploy/haproxy/haproxy.cfg itself: only its listeners, its replicas' addresses and its balance
 * factor are made local, and each answer says which replica served it (X-Upstream).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { findProgram, listening } from './router-process';
import { kRepoRoot } from '../repo-root';

export const HAPROXY_CFG = path.join(kRepoRoot, 'deploy', 'haproxy', 'haproxy.cfg');

export const findHaproxy = (): string | null => findProgram('haproxy');

/** One replica: its HTTP listener, and its gRPC listener when it has one. */
export interface Replica {
  httpPort: number;
  grpcPort?: number;
}

export interface LocalHaproxy {
  httpPort: number;
  grpcPort: number;
  /** In the order of the deployed file's `server` lines, whose names (mme-1, mme-2, …) they keep. */
  replicas: readonly Replica[];
  /** hash-balance-factor, % of the mean load in flight a replica may take; the deployed file's when unset. */
  balanceFactor?: number;
  /** A Unix socket for HAProxy's runtime API (see inFlight), when set. */
  statsSocket?: string;
}

/**
 * deploy/haproxy/haproxy.cfg on loopback. The ring is built on the servers' order, so the first
 * replica takes the place of the file's first server (mme-1) and so on; replicas past the file's
 * count get the next names. A gRPC backend server is listed only for replicas with a gRPC port.
 */
export function localHaproxyConfig(c: LocalHaproxy): string {
  const deployed = fs.readFileSync(HAPROXY_CFG, 'utf8');
  const serverLines = (grpc: boolean) =>
    c.replicas
      .map((r, i) =>
        grpc && r.grpcPort === undefined
          ? ''
          : `    server mme-${i + 1} 127.0.0.1:${grpc ? r.grpcPort : r.httpPort}${grpc ? ` proto h2 check-proto h1 port ${r.httpPort}` : ''}`,
      )
      .filter(Boolean)
      .join('\n');
  let backend = '';
  const local = deployed
    .split('\n')
    .flatMap((line) => {
      if (/^backend /.test(line)) backend = line.split(/\s+/)[1]!;
      if (/^\s+server /.test(line)) return [];
      if (/^\s+default-server /.test(line))
        // The replicas appear in one place: right after default-server, which must precede them.
        return [line, '    http-after-response set-header X-Upstream %[srv_name]', serverLines(backend === 'mme_grpc')];
      if (c.statsSocket && /^global$/.test(line)) return [line, `    stats socket ${c.statsSocket} level admin`];
      if (c.balanceFactor !== undefined && /^\s+hash-balance-factor /.test(line))
        return [line.replace(/\d+$/, String(c.balanceFactor))];
      return [
        line
          .replace(/^(\s+bind) :8080$/, `$1 127.0.0.1:${c.httpPort}`)
          .replace(/^(\s+bind) :7070 /, `$1 127.0.0.1:${c.grpcPort} `),
      ];
    })
    .join('\n');
  if (local.includes('bind :')) throw new Error(`${HAPROXY_CFG}: a listener was not made local`);
  return local;
}

/** `haproxy -c` on a configuration: null when valid, else HAProxy's complaint. */
export function checkHaproxyConfig(bin: string, file: string): string | null {
  const r = spawnSync(bin, ['-c', '-q', '-f', file], { encoding: 'utf8' });
  return r.status === 0 ? null : `${r.stdout}${r.stderr}`.trim();
}

/** Requests each server of `backend` holds in flight (scur), by server name, read through the runtime API's `show stat`. */
export async function inFlight(statsSocket: string, backend: string): Promise<Map<string, number>> {
  const socket = net.connect(statsSocket);
  socket.end('show stat\n');
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const [header, ...rows] = Buffer.concat(chunks).toString().trim().split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const [px, sv, scur] = ['pxname', 'svname', 'scur'].map((c) => columns.indexOf(c));
  return new Map(
    rows
      .map((r) => r.split(','))
      .filter((f) => f[px] === backend && f[sv] !== 'BACKEND')
      .map((f) => [f[sv], Number(f[scur])]),
  );
}

export class Haproxy {
  private constructor(private readonly child: ChildProcess) {}

  /** Starts HAProxy in the foreground (-db) with `config`, once `haproxy -c` accepts it; resolves when it listens on `port`. */
  static async start(bin: string, dir: string, port: number, config: string): Promise<Haproxy> {
    const file = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(file, config);
    const problem = checkHaproxyConfig(bin, file);
    if (problem) throw new Error(`haproxy refused its configuration: ${problem}`);
    const child = spawn(bin, ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    const log: string[] = [];
    readline.createInterface({ input: child.stderr }).on('line', (l) => log.push(l));
    await listening(port, child, 'haproxy').catch((err: Error) => {
      throw new Error(`${err.message}: ${log.join('\n')}`);
    });
    return new Haproxy(child);
  }

  /** SIGUSR1, HAProxy's soft stop: it stops listening and finishes the requests it holds. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.kill('SIGUSR1');
    await once(this.child, 'exit');
  }
}
