/**
 * Per-model limits from outside (issue 48, part 31): the cores a CPU-bound model with two workers
 * takes under 4 s of saturating load with cpu_limit=0.5 and without (its workers' CPU time from
 * /proc over the wall time), and what a handler allocating 400 MB under memory_limit_mb=150, its
 * neighbour and its next request are answered; and how long after its last answer a model with
 * idle_unload_seconds is gone (GET /models/{name} polled every 20 ms until 404), and its next invoke.
 * Needs root and a writable cgroup tree: the server says at start how limits are held here, and the
 * result carries that line.
 */
import { behaviourHandler } from '../../../harness/fault-handlers';
import { postJson, request } from '../../../harness/http-requests';
import { hammer } from '../../../harness/load-generator';
import { addModel, writeModelDir } from '../../../harness/onnx-models';
import { cpuMicros } from '../../../harness/process-probes';
import { benchUsage, runBench, startBenchServer, type BenchServer } from '../kit/bench-run';

/** Each request keeps a core busy this long: two workers could take two cores. */
const kSpinMs = 50;
const kLoadSeconds = 4;
/** Enough connections to keep both workers' queues full for the whole run. */
const kConnections = 8;

export interface CpuRun {
  cpuLimit: number | null;
  workers: number;
  /** The workers' CPU time over the run's wall time. */
  cores: number;
  rps: number;
  non2xx: number;
  errors: number;
}

export interface Answer {
  status: number;
  message: string | null;
}

export interface IdleRun {
  idleUnloadSeconds: number;
  /** From the last answer, as the client got it, to the first 404 of GET /models/{name}. */
  unloadedAfterMs: number;
  /** The target: unloaded within idle_unload_seconds + 1 s. */
  withinTarget: boolean;
  /** The next invoke's answer (a load on demand) and how long it took. */
  nextInvoke: Answer & { ms: number };
}

export interface LimitsResult {
  /** The server's ready line: how limits are held on the machine that ran this. */
  readyLine: string;
  cpu: CpuRun[];
  oom: { limited: Answer; neighbour: Answer; limitedAfter: Answer; restartLine: string | null };
  idle: IdleRun[];
  idleLines: string[];
}

async function load(server: BenchServer, name: string, fields: Record<string, unknown>): Promise<void> {
  const url = writeModelDir(server.store, name, addModel(), { 'handler.js': behaviourHandler });
  const res = await postJson(`${server.url}/models`, { model_name: name, url, ...fields });
  if (res.status !== 200) throw new Error(`load ${name}: ${res.status} ${res.text}`);
}

async function cpuRun(server: BenchServer, cpuLimit: number | null): Promise<CpuRun> {
  const name = cpuLimit === null ? 'unlimited' : 'limited';
  await load(server, name, { initial_workers: 2, ...(cpuLimit === null ? {} : { cpu_limit: cpuLimit }) });
  const pids = ((await request(`${server.url}/models/${name}`)).body.workers as Array<{ pid: number }>).map(
    (w) => w.pid,
  );
  const cpu = () => pids.reduce((sum, pid) => sum + cpuMicros(pid), 0);
  const before = cpu();
  const t0 = performance.now();
  const run = await hammer(`${server.url}/models/${name}/invoke`, JSON.stringify({ spinMs: kSpinMs }), {
    connections: kConnections,
    seconds: kLoadSeconds,
  });
  const cores = (cpu() - before) / ((performance.now() - t0) * 1000);
  await fetch(`${server.url}/models/${name}`, { method: 'DELETE' });
  return { cpuLimit, workers: pids.length, cores, rps: run.rps, non2xx: run.non2xx, errors: run.errors };
}

/** A model in model_store (its next invoke loads it by name) with idle_unload_seconds, invoked once, then watched. */
async function idleRun(server: BenchServer, seconds: number): Promise<IdleRun> {
  const name = `idle-${seconds}`;
  await load(server, name, { idle_unload_seconds: seconds });
  const invoke = () => postJson(`${server.url}/models/${name}/invoke`, {});
  if ((await invoke()).status !== 200) throw new Error(`invoke ${name} failed`);
  const t0 = performance.now();
  while ((await request(`${server.url}/models/${name}`)).status !== 404) await new Promise((r) => setTimeout(r, 20));
  const unloadedAfterMs = Math.round(performance.now() - t0);
  const t1 = performance.now();
  const next = answer(await invoke());
  const ms = Math.round(performance.now() - t1);
  await fetch(`${server.url}/models/${name}`, { method: 'DELETE' });
  return {
    idleUnloadSeconds: seconds,
    unloadedAfterMs,
    withinTarget: unloadedAfterMs <= (seconds + 1) * 1000,
    nextInvoke: { ...next, ms },
  };
}

const answer = (r: { status: number; body: { message?: string } }): Answer => ({
  status: r.status,
  message: r.body?.message ?? null,
});

export async function benchLimits(): Promise<LimitsResult> {
  const server = await startBenchServer(['spare_workers=0']);
  try {
    const cpu = [await cpuRun(server, null), await cpuRun(server, 0.5)];
    await load(server, 'oom', { memory_limit_mb: 150 });
    await load(server, 'neighbour', {});
    const invoke = (name: string, body: unknown) => postJson(`${server.url}/models/${name}/invoke`, body);
    const [limited, neighbour] = await Promise.all([invoke('oom', { allocMb: 400 }), invoke('neighbour', {})]);
    const limitedAfter = await invoke('oom', { allocMb: 20 });
    const idle: IdleRun[] = [];
    for (const seconds of [1, 1, 1, 2, 5]) idle.push(await idleRun(server, seconds));
    return {
      // Read last: the ready line comes after the listener's, which is all the start waits for.
      readyLine: server.lines.find((l) => l.includes('per-model limits')) ?? '',
      cpu,
      oom: {
        limited: answer(limited),
        neighbour: answer(neighbour),
        limitedAfter: answer(limitedAfter),
        restartLine: server.lines.find((l) => l.includes('exit reason: memory-limit')) ?? null,
      },
      idle,
      idleLines: server.lines.filter((l) => l.includes('unloaded: idle for')),
    };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'npm run bench:limits',
  'cpu_limit=0.5 on a CPU-bound model with two workers (cores used over 4 s of saturating load, and without the limit), a handler allocating 400 MB under memory_limit_mb=150 beside a neighbour, and how soon a model with idle_unload_seconds is unloaded after its last answer.',
);

if (require.main === module) runBench(USAGE, benchLimits);
