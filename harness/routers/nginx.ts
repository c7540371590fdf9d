/**
 * Real nginx (Debian's package) as the fleet's router on loopback: a configuration built around
 * deploy/nginx/model-key.conf, the same model-name key the deployed nginx and ingress-nginx hash on,
 * with consistent hashing or plain round robin over the given replicas.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { findProgram, listening } from './router-process';
import { kRepoRoot } from '../repo-root';

export const MODEL_KEY_CONF = path.join(kRepoRoot, 'deploy', 'nginx', 'model-key.conf');

export type Balancing = 'consistent-hash' | 'round-robin';

export interface RouterConfig {
  /** Where nginx keeps its pid and temporary files. */
  dir: string;
  port: number;
  /** host:port of each replica. */
  upstreams: readonly string[];
  balancing: Balancing;
}

/** A complete nginx.conf; `X-Upstream` tells the client which replica answered. */
export function routerConfig(c: RouterConfig): string {
  return `daemon off;
pid ${path.join(c.dir, 'nginx.pid')};
error_log stderr notice;
worker_processes 1;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path ${path.join(c.dir, 'body')};
    proxy_temp_path ${path.join(c.dir, 'proxy')};
    fastcgi_temp_path ${path.join(c.dir, 'fastcgi')};
    uwsgi_temp_path ${path.join(c.dir, 'uwsgi')};
    scgi_temp_path ${path.join(c.dir, 'scgi')};
    include ${MODEL_KEY_CONF};
    upstream mme {
${c.balancing === 'consistent-hash' ? '        hash $mme_model consistent;\n' : ''}${c.upstreams.map((u) => `        server ${u};`).join('\n')}
        keepalive 32;
    }
    server {
        listen 127.0.0.1:${c.port};
        underscores_in_headers on;
        location / {
            proxy_pass http://mme;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_read_timeout 75s;
            proxy_next_upstream error;
            add_header X-Upstream $upstream_addr always;
        }
    }
}
`;
}

/** The nginx binary, or null when it is not installed. */
export const findNginx = (): string | null => findProgram('nginx');

/** `nginx -t` on a configuration: null when valid, else nginx's complaint. */
export function checkConfig(bin: string, file: string, dir: string): string | null {
  const r = spawnSync(bin, ['-t', '-q', '-c', file, '-p', dir, '-e', 'stderr'], { encoding: 'utf8' });
  return r.status === 0 ? null : r.stderr.trim();
}

export class Nginx {
  private constructor(
    private readonly child: ChildProcess,
    private readonly file: string,
    private readonly log: string[],
  ) {}

  /** Starts nginx in the foreground with `config` (see routerConfig), once `nginx -t` accepts it. */
  static async start(bin: string, dir: string, port: number, config: string): Promise<Nginx> {
    const file = path.join(dir, 'nginx.conf');
    fs.writeFileSync(file, config);
    const problem = checkConfig(bin, file, dir);
    if (problem) throw new Error(`nginx refused its configuration: ${problem}`);
    const child = spawn(bin, ['-c', file, '-p', dir, '-e', 'stderr'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const log: string[] = [];
    readline.createInterface({ input: child.stderr }).on('line', (l) => log.push(l));
    await listening(port, child, 'nginx');
    return new Nginx(child, file, log);
  }

  /**
   * Switches to a new configuration as `nginx -s reload` does (SIGHUP): new workers take new
   * requests, old ones finish theirs. Resolves when nginx reports the new workers started.
   */
  async reload(config: string): Promise<void> {
    fs.writeFileSync(this.file, config);
    const seen = this.log.length;
    this.child.kill('SIGHUP');
    while (!this.log.slice(seen).some((l) => l.includes('start worker process'))) {
      if (this.child.exitCode !== null)
        throw new Error(`nginx exited during reload: ${this.log.slice(seen).join('\n')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.kill('SIGQUIT');
    await once(this.child, 'exit');
  }
}
