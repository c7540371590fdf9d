/**
 * The server as a process of its own, started from the CLI (`node dist/src/main.js serve …`) as
 * SageMaker starts it (harness/test-server.ts runs it inside the calling process instead).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { tempDir, testProperties } from './test-server';

export const kMain = path.join(__dirname, '..', 'src', 'main.js');
/**
 * PR_SET_PDEATHSIG through util-linux (as the server does for its workers): a server started here
 * dies with the test run that started it, even one killed by SIGKILL or Ctrl-C, instead of
 * holding its ports and workers on.
 */
const kDiesWithParent = ((setpriv) => (setpriv ? [setpriv, '--pdeathsig', 'KILL'] : []))(
  ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => fs.existsSync(p)),
);

export interface CliServer {
  child: ChildProcess;
  pid: number;
  /** The first listener it reported (both APIs with a shared address). */
  url: string;
  /** The same listener: the test base config shares one address (what loadModel() posts to). */
  managementUrl: string;
  /** stdout and stderr, line by line, as they arrive. */
  lines: string[];
  /** NAME=value in the environment of the server and everything it starts (see orphansOf). */
  marker: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (the shutdown SageMaker sends), then the exit code once the process is gone. */
  stop(): Promise<number | null>;
}

/** What runs on everything a CLI server logged, once it has exited (the test suite's root hooks add a check). */
const logChecks: ((lines: readonly string[]) => void)[] = [];

export function checkEveryCliServerLog(check: (lines: readonly string[]) => void): void {
  logChecks.push(check);
}

export interface CliOptions {
  env?: Record<string, string>;
  /** Runs first and must exec the command it is given (e.g. unshare … sh -c '… exec "$@"'). */
  launcher?: string[];
  cwd?: string;
  /** The server's entry point (default: this build's dist/src/main.js). */
  main?: string;
  /** Options for node itself, before the entry point (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

/** Starts `node dist/src/main.js serve ...args` and resolves with the URL it reports listening on. */
export async function startCli(args: string[], opts: CliOptions = {}): Promise<CliServer> {
  const marker = `MME_TEST_SERVER=${randomUUID()}`;
  const [name, value] = marker.split('=');
  const { env = {}, launcher = [], cwd } = opts;
  // Before a launcher and after it: a launcher that forks (unshare --fork) is the server's parent.
  const [cmd, ...argv] = [
    ...kDiesWithParent,
    ...launcher,
    ...(launcher.length > 0 ? kDiesWithParent : []),
    process.execPath,
    ...(opts.nodeArgs ?? []),
    opts.main ?? kMain,
    'serve',
    ...args,
  ];
  const child = spawn(cmd, argv, {
    env: { ...process.env, ...env, [name]: value },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const lines: string[] = [];
  // 'close' comes once its output has been read to the end.
  child.once('close', () => {
    for (const check of logChecks) check(lines);
  });
  readline.createInterface({ input: child.stderr }).on('line', (l) => lines.push(l));
  const url = await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on('line', (l) => {
      lines.push(l);
      const m = /API listening on (https?:\/\/[^\s"]+)/.exec(l);
      if (m) resolve(m[1]);
    });
    void exited.then(({ code }) => reject(new Error(`server exited with ${code}: ${lines.join('\n')}`)));
  });
  return {
    child,
    pid: child.pid!,
    url,
    managementUrl: url,
    lines,
    marker,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return (await exited).code;
    },
  };
}

/** A CLI server whose config.properties is the test base (see testProperties) plus `properties`. */
export function startCliServer(properties: string, opts: CliOptions & { store?: string } = {}): Promise<CliServer> {
  const store = opts.store ?? tempDir('mme-store-');
  const configFile = path.join(tempDir('mme-config-'), 'config.properties');
  fs.writeFileSync(configFile, testProperties(store, properties));
  return startCli(['--mms-config', configFile], opts);
}

/** Runs `run` against a fresh CLI server (see startCliServer) and stops the server whatever happens. */
export async function withCliServer<T>(
  properties: string,
  run: (s: CliServer, store: string) => Promise<T>,
): Promise<T> {
  const store = tempDir('mme-store-');
  const s = await startCliServer(properties, { store });
  try {
    return await run(s, store);
  } finally {
    await s.stop();
  }
}

/** A port that was free a moment ago (for keys that must name a real port, not 0). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}

/**
 * `n` ports free now and different from each other: all are held open until each has its own, so
 * two listeners of one router (HTTP and gRPC) never get the same port, which HAProxy's SO_REUSEPORT
 * would then share between them without an error.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => net.createServer().listen(0, '127.0.0.1'));
  await Promise.all(servers.map((srv) => once(srv, 'listening')));
  const ports = servers.map((srv) => (srv.address() as net.AddressInfo).port);
  await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
  return ports;
}

/** `node dist/src/main.js serve --mms-config FILE` (FILE holding `properties` as written) run to its exit, for start-up errors. */
export function runCliToExit(
  properties: string,
  env: Record<string, string> = {},
  cwd?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const configFile = path.join(tempDir('mme-config-'), 'config.properties');
  fs.writeFileSync(configFile, properties);
  const child = spawn(process.execPath, [kMain, 'serve', '--mms-config', configFile], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(cwd ? { cwd } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  return once(child, 'close').then(([code]) => ({ code: code as number | null, stdout, stderr }));
}
