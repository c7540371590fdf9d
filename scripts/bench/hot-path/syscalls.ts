/**
 * Syscalls per request on both sides of the hot path, from `strace -c -f` attached to the server
 * and to its worker while a fixed load runs (the tiny MLP at 16 connections, or .npy at 4): what
 * issue 30 counts wake-ups with. Needs strace (apt-get install -y strace).
 * Usage: node dist/scripts/bench/hot-path/syscalls.js [tiny|npy]   → JSON on stdout
 */
import { spawn } from 'node:child_process';
import { hammer } from '../../../harness/load-generator';
import { postJson } from '../../../harness/http-requests';
import { imageClassifierModel, writeModelDir, writeTinyMlp } from '../../../harness/onnx-models';
import { writeNpy } from '../../../src/worker-process/npy';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';

interface Counted {
  calls: Record<string, number>;
  perRequest: Record<string, number>;
  totalPerRequest: number;
}

/** strace -c's table: syscall → calls. */
function parseStrace(text: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line);
    if (m && m[2] !== 'total') calls[m[2]] = Number(m[1]);
  }
  return calls;
}

function attach(pid: number): { stop: () => Promise<Record<string, number>> } {
  const child = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return {
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve(parseStrace(err)));
        child.kill('SIGINT');
      }),
  };
}

function perRequest(calls: Record<string, number>, n: number): Counted {
  const top = Object.entries(calls)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  return {
    calls,
    perRequest: Object.fromEntries(top.map(([k, v]) => [k, Math.round((v / n) * 100) / 100])),
    totalPerRequest: Math.round((total / n) * 100) / 100,
  };
}

export async function benchSyscalls(kind: string): Promise<unknown> {
  const server = await startBenchServer();
  try {
    const tiny = kind !== 'npy';
    const dir = tiny ? writeTinyMlp(server.store) : writeModelDir(server.store, 'image', imageClassifierModel());
    const name = tiny ? 'tiny' : 'image';
    const res = await postJson(`${server.url}/models`, { model_name: name, url: dir, initial_workers: 1 });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    const body = tiny
      ? JSON.stringify({ inputs: { input: [Array.from({ length: 16 }, (_, i) => i / 16)] } })
      : writeNpy({ type: 'float32', dims: [1, 3, 224, 224], data: new Float32Array(3 * 224 * 224).fill(0.5) });
    const contentType = tiny ? 'application/json' : 'application/x-npy';
    const connections = tiny ? 16 : 4;
    const url = `${server.url}/models/${name}/invoke`;
    await hammer(url, body, { connections, seconds: 2, contentType });
    const desc = await (await fetch(`${server.url}/models/${name}`)).json();
    const workerPid = Number(JSON.stringify(desc).match(/"pid":(\d+)/)?.[1]);
    const s = attach(server.child.pid!);
    const w = attach(workerPid);
    // strace needs a moment to attach to every thread.
    await new Promise((r) => setTimeout(r, 1000));
    const seconds = 5;
    const r = await hammer(url, body, { connections, seconds, contentType });
    const n = Math.round(r.rps * seconds);
    const [sc, wc] = await Promise.all([s.stop(), w.stop()]);
    return {
      kind,
      connections,
      requests: n,
      rpsUnderStrace: r.rps,
      server: perRequest(sc, n),
      worker: perRequest(wc, n),
    };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'node dist/scripts/bench/hot-path/syscalls.js [tiny|npy]',
  'Syscalls per request, server and worker, under strace -c.',
);

if (require.main === module) runBench(USAGE, () => benchSyscalls(process.argv[2] ?? 'tiny'));
