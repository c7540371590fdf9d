/**
 * T-P5 mixed_soak_with_chaos: lanes of traffic, each owning its own models, pick invoke / load /
 * unload at 70 / 20 / 10 % while a killer SIGKILLs a random worker at a steady pace. A failed
 * operation that overlapped a kill (in flight at the kill, or begun before the server had replaced
 * the killed worker, as its models' state shows) is the injected fault doing its work; any other
 * failure counts against the 0.1 % error budget. The overlap is by the order of events, not by a
 * clock: a slow machine stretches the window, it cannot push a kill's failures out of it. The
 * server's own RSS is sampled throughout (middle vs end) and everything must be gone once the
 * models are unloaded. `npm run chaos` runs one hour with a kill every 5 minutes; the test suite
 * runs 30 s with a kill every 10 s.
 *
 * `npm run chaos -- MINUTES SECONDS shared` runs the shared-host version: two hosts, the
 * self-managed cache holding fewer models than the lanes use (so it evicts), and scale changes
 * among the operations. There, a load answered 409 or an unload or scale answered 404 is the
 * cache's doing (an invoke loaded the model on demand, or an eviction removed it), not an error.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { withCliServer, type CliServer } from '../../harness/cli-server';
import { footprint, leakVerdict, type Footprint, type LeakVerdict } from '../../harness/footprint';
import { rssBytes, waitFor, workerPidsOf } from '../../harness/process-probes';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { CaseReport } from './report';

/** Runs for a time (the long CLI run) or for a number of operations (the test: no clock involved). */
export interface ChaosOptions {
  durationMs?: number;
  operations?: number;
  killEveryMs?: number;
  killEveryOps?: number;
  lanes?: number;
  modelsPerLane?: number;
  /** Shared hosts and the self-managed cache holding `maxLoaded` models (default: dedicated workers, SageMaker mode). */
  shared?: { hosts: number; maxLoaded: number };
  /** The server's most RSS growth from the middle of the run to its end (default 100 MiB); null: not judged (npm test). */
  rssGrowthLimit?: number | null;
  progress?: (line: string) => void;
}

export interface ChaosResult extends LeakVerdict {
  operations: number;
  kills: number;
  /** Failed operations that overlapped a kill. */
  injected: number;
  /** Failed operations that did not: what the error budget counts. */
  errors: string[];
  errorRate: number;
  /** Answers that the self-managed cache explains (shared mode): see the header. */
  cacheAnswers: number;
  /** The server process alone, at the first sample and after the last unload. */
  rssStartBytes: number;
  rssEndBytes: number;
  fdsStart: number;
  fdsEnd: number;
}

/** `start`, `end`, `at` and `recovered` are positions in one sequence of events (see `tick`), not times. */
interface Op {
  what: string;
  start: number;
  end: number;
  status: number;
  text: string;
}

interface Kill {
  pid: number;
  at: number;
  /** When the models that ran on it were seen whole again (Infinity until then). */
  recovered: number;
}

const kRow = { inputs: { x: [Array(16).fill(1)] } };
/** Only a guard against a hang: a server that never replaces a killed worker fails the run, naming it. */
const kRecoveryBoundMs = 10 * 60_000;

interface Described {
  workerTarget: number;
  workers: Array<{ pid: number; status: string }>;
}

async function describeAll(s: CliServer): Promise<Map<string, Described | null>> {
  const models = (await request(`${s.url}/models`)).body.models as Array<{ modelName: string }>;
  const out = new Map<string, Described | null>();
  for (const { modelName } of models) {
    const res = await request(`${s.url}/models/${modelName}`);
    out.set(modelName, res.status === 200 ? (res.body as Described) : null);
  }
  return out;
}

/** `model` no longer runs on `pid` and has its workers ready again, or is gone (unloaded or evicted). */
async function whole(s: CliServer, model: string, pid: number): Promise<boolean> {
  const res = await request(`${s.url}/models/${model}`);
  if (res.status === 404) return true;
  if (res.status !== 200) return false;
  const d = res.body as Described;
  const ready = d.workers.filter((w) => w.status === 'READY' && w.pid !== pid).length;
  return !d.workers.some((w) => w.pid === pid) && ready >= d.workerTarget;
}

/**
 * One lane: its own models, one operation at a time, until `done`; `afterOp` runs after each.
 * Invoke / load / unload at 70 / 20 / 10 %, or with `scales` 65 / 20 / 10 / 5 % scale.
 */
async function lane(
  s: CliServer,
  dirs: Map<string, string>,
  done: () => boolean,
  ops: Op[],
  afterOp: () => void,
  scales: boolean,
  tick: () => number,
): Promise<void> {
  const loaded = new Set<string>();
  const names = [...dirs.keys()];
  const pick = (from: string[]) => from[Math.floor(Math.random() * from.length)];
  while (!done()) {
    const r = Math.random();
    const unloaded = names.filter((n) => !loaded.has(n));
    const op =
      loaded.size === 0 || (r >= 0.7 && r < 0.9 && unloaded.length > 0)
        ? 'load'
        : r >= 0.9
          ? 'unload'
          : scales && r >= 0.65
            ? 'scale'
            : 'invoke';
    const name = op === 'load' ? pick(unloaded) : pick([...loaded]);
    const start = tick();
    const res =
      op === 'load'
        ? await loadModel(s, name, dirs.get(name)!)
        : op === 'unload'
          ? await request(`${s.url}/models/${name}`, { method: 'DELETE' })
          : op === 'scale'
            ? await request(
                `${s.url}/models/${name}?min_worker=${1 + Math.floor(Math.random() * 2)}&synchronous=true`,
                { method: 'PUT' },
              )
            : await invoke(s, name, kRow);
    ops.push({ what: `${op} ${name}`, start, end: tick(), status: res.status, text: res.text });
    afterOp();
    if (op === 'load' && res.status === 200) loaded.add(name);
    if (op === 'unload' && res.status === 200) loaded.delete(name);
  }
}

export function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const properties = o.shared
    ? `worker_mode=shared\nshared_workers=${o.shared.hosts}\nmodel_cache=on\nmax_loaded_models=${o.shared.maxLoaded}`
    : '';
  return withCliServer(properties, async (s, store) => {
    const ops: Op[] = [];
    const kills: Kill[] = [];
    const recoveries: Promise<void>[] = [];
    // One process, one event at a time: a counter orders operations, kills and recoveries exactly.
    let events = 0;
    const tick = () => ++events;
    const samples: Footprint[] = [];
    const lanes = Array.from(
      { length: o.lanes ?? 4 },
      (_, l) =>
        new Map(
          Array.from({ length: o.modelsPerLane ?? 3 }, (_, j) => {
            const name = `l${l}m${j}`;
            return [name, writeModelDir(store, name, addModel())] as const;
          }),
        ),
    );
    const modelsOn = async (pid: number) =>
      [...(await describeAll(s))].filter(([, d]) => d?.workers.some((w) => w.pid === pid)).map(([name]) => name);
    // The window closes once the server has reaped the victim (a spare it handed out meanwhile is
    // then a model's) and each model that ran on it, before the kill or since, is whole again.
    const killOne = async () => {
      const pids = workerPidsOf(s.pid);
      if (pids.length === 0) return;
      const pid = pids[Math.floor(Math.random() * pids.length)];
      const on = await modelsOn(pid);
      const k: Kill = { pid, at: tick(), recovered: Infinity };
      kills.push(k);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // It exited on its own meanwhile (an unload, a scale down): nothing was injected.
      }
      await waitFor(() => !fs.existsSync(`/proc/${pid}`), `the server to reap worker ${pid}`, kRecoveryBoundMs);
      for (const model of new Set([...on, ...(await modelsOn(pid))]))
        await waitFor(
          () => whole(s, model, pid),
          `model ${model} to be whole after worker ${pid} was killed`,
          kRecoveryBoundMs,
          50,
        );
      k.recovered = tick();
    };
    const kill = () => void recoveries.push(killOne());
    const killer = o.killEveryMs ? setInterval(kill, o.killEveryMs) : null;
    // The server alone: the workers' share depends on how many models happen to be loaded.
    const sample = () => samples.push({ ...footprint(s), rssBytes: rssBytes(s.pid) });
    // A timed run samples every second; a run of N operations every N/8 of them, however fast they go:
    // with under 20 samples the leak verdict's end is the reading after the last unload alone.
    const sampler =
      o.operations === undefined
        ? setInterval(() => {
            sample();
            if (samples.length % 60 === 0)
              o.progress?.(
                `${Math.round(samples.length / 60)} min: ${ops.length} operations, ${kills.length} kills, server RSS ${(samples.at(-1)!.rssBytes / 2 ** 20).toFixed(0)} MiB`,
              );
          }, 1000)
        : null;
    const sampleEveryOps = o.operations === undefined ? 0 : Math.max(1, Math.ceil(o.operations / 8));
    const deadline = Date.now() + (o.durationMs ?? Infinity);
    const done = () => (o.operations !== undefined ? ops.length >= o.operations : Date.now() >= deadline);
    const afterOp = () => {
      if (o.killEveryOps && ops.length % o.killEveryOps === 0) kill();
      if (sampleEveryOps && ops.length % sampleEveryOps === 0) sample();
    };
    await Promise.all(lanes.map((dirs) => lane(s, dirs, done, ops, afterOp, o.shared !== undefined, tick)));
    if (killer) clearInterval(killer);
    await Promise.all(recoveries);
    if (sampler) clearInterval(sampler);
    const models = (await request(`${s.url}/models`)).body.models as Array<{ modelName: string }>;
    for (const m of models)
      assert.equal(
        (await request(`${s.url}/models/${m.modelName}`, { method: 'DELETE' })).status,
        200,
        `unload ${m.modelName}`,
      );
    // A host killed with no model on it counts as recovered once reaped, but its replacement may still
    // be starting: wait for the pool to reach its size. A host that never comes back, or one too many,
    // still fails below, named by the count.
    const hosts = o.shared?.hosts;
    if (hosts !== undefined)
      await waitFor(() => footprint(s).processes === hosts, `${hosts} shared hosts`, kRecoveryBoundMs, 200).catch(
        () => undefined,
      );
    const end = { rssBytes: rssBytes(s.pid), fds: footprint(s).fds };
    samples.push(footprint(s));
    // Shared mode with the cache: a 409 load or a 404 unload/scale is an on-demand load or an eviction that came first.
    const cacheAnswer = (op: Op) =>
      o.shared !== undefined &&
      ((op.what.startsWith('load') && op.status === 409) ||
        (!op.what.startsWith('load') && !op.what.startsWith('invoke') && op.status === 404));
    const cacheAnswers = ops.filter(cacheAnswer).length;
    const failed = ops.filter((op) => op.status !== 200 && !cacheAnswer(op));
    const overlaps = (op: Op) => kills.some((k) => op.start < k.recovered && op.end > k.at);
    const injected = failed.filter(overlaps);
    const errors = failed
      .filter((op) => !injected.includes(op))
      .map((op) => `${op.what}: ${op.status} ${op.text.replace(/\s+/g, ' ').slice(0, 200)}`);
    // Shared hosts stay up with no model in them.
    const verdict = leakVerdict(samples, {
      rssGrowthBytes: o.rssGrowthLimit === undefined ? 100 * 2 ** 20 : o.rssGrowthLimit,
      fdSlack: 5,
      processes: o.shared?.hosts ?? 0,
    });
    const errorRate = errors.length / Math.max(1, ops.length);
    if (errorRate >= 0.001)
      verdict.problems.push(
        `${errors.length} errors in ${ops.length} operations outside the injected faults: ${errors.slice(0, 5).join(' | ')}`,
      );
    return {
      ...verdict,
      ok: verdict.problems.length === 0,
      operations: ops.length,
      kills: kills.length,
      injected: injected.length,
      errors,
      errorRate,
      cacheAnswers,
      rssStartBytes: samples[0].rssBytes,
      rssEndBytes: end.rssBytes,
      fdsStart: samples[0].fds,
      fdsEnd: end.fds,
    };
  });
}

const USAGE = `Usage: npm run chaos -- [MINUTES] [SECONDS_BETWEEN_KILLS] [shared]
  T-P5 mixed traffic while a random worker is SIGKILLed every SECONDS_BETWEEN_KILLS (default 300) for MINUTES (default 60).
  shared: 2 shared hosts and a self-managed cache holding 6 of the 12 models (it evicts); a host is what gets killed.`;

if (require.main === module) {
  // node dist/scripts/hardening/chaos.js [minutes = 60] [seconds between kills = 300] [shared]
  const minutes = Number(process.argv[2] ?? 60);
  const killEverySeconds = Number(process.argv[3] ?? 300);
  const shared = process.argv[4] === 'shared' ? { hosts: 2, maxLoaded: 6 } : undefined;
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  void CaseReport.run(USAGE, async (report) => {
    const r = await runChaos({
      durationMs: minutes * 60_000,
      killEveryMs: killEverySeconds * 1000,
      shared,
      progress: (l) => console.log(`  ${l}`),
    });
    report.add(
      `T-P5 mixed_soak_with_chaos${shared ? ', shared hosts, cache evicting' : ''}, ${minutes} min`,
      r.problems,
      `${r.operations} operations, ${r.kills} kills, ${r.injected} failures from them, ${r.errors.length} other errors${shared ? `, ${r.cacheAnswers} answers the cache explains` : ''}, server RSS ${mib(r.rssStartBytes)} → ${mib(r.rssEndBytes)} (${mib(r.rssGrowthBytes)} from the middle), fds ${r.fdsStart} → ${r.fdsEnd}`,
    );
  });
}
