/**
 * The body rings' own before/after on one machine at one time: two servers of this build, one
 * with body rings and one without (body_handoff_bytes=0), and the in-process baseline, each
 * taking turns at .npy [1,3,224,224] (~600 KB) at 4 connections, so drift on a shared machine hits
 * all three alike. Per side: req/s and CPU per request (µs, the server and its workers), medians
 * over the turns, and the server's GC time over its turns (nodejs_gc_duration_seconds).
 * Usage: node dist/scripts/bench/data-plane/body-handoff.js   → JSON on stdout
 */
import path from 'node:path';
import { hammer } from '../../../harness/load-generator';
import { postJson } from '../../../harness/http-requests';
import { imageClassifierModel, writeModelDir } from '../../../harness/onnx-models';
import { median } from '../../../harness/statistics';
import { writeNpy } from '../../../src/worker-process/npy';
import { scrapeGcSeconds } from './data-plane';
import { benchDurations, benchUsage, cpuPerRequest, runBench, startBaseline, startBenchServer } from '../kit/bench-run';

/** The server's GC time so far, all kinds, seconds. */
async function gcSeconds(url: string): Promise<number> {
  return Object.values(await scrapeGcSeconds(url)).reduce((a, b) => a + b, 0);
}

export async function benchBodyHandoff(): Promise<unknown> {
  const ring = await startBenchServer();
  const socket = await startBenchServer(['body_handoff_bytes=0']);
  const model = imageClassifierModel();
  const baseline = await startBaseline(path.join(writeModelDir(ring.store, 'image', model), 'model.onnx'));
  try {
    for (const s of [ring, socket]) {
      const url = writeModelDir(s.store, 'image', model);
      const res = await postJson(`${s.url}/models`, { model_name: 'image', url, initial_workers: 1 });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    }
    const npy = writeNpy({ type: 'float32', dims: [1, 3, 224, 224], data: new Float32Array(3 * 224 * 224).fill(0.5) });
    const d = benchDurations();
    const sides = [
      { name: 'ring', url: `${ring.url}/models/image/invoke`, pid: ring.child.pid!, server: ring.url },
      { name: 'socket', url: `${socket.url}/models/image/invoke`, pid: socket.child.pid!, server: socket.url },
      { name: 'inProcess', url: baseline.url, pid: baseline.pid, server: null },
    ];
    const runs = new Map(sides.map((s) => [s.name, { rps: [] as number[], cpu: [] as number[], gc: 0, seconds: 0 }]));
    for (const s of sides)
      await hammer(s.url, npy, { connections: 4, seconds: d.warmupSeconds, contentType: 'application/x-npy' });
    const turns = process.env.BENCH_QUICK ? 3 : 5;
    for (let i = 0; i < turns; i++) {
      for (const s of sides) {
        const r = runs.get(s.name)!;
        const gc0 = s.server ? await gcSeconds(s.server) : 0;
        let rps = 0;
        const cpu = await cpuPerRequest(s.pid, async () => {
          rps = (await hammer(s.url, npy, { connections: 4, seconds: d.seconds, contentType: 'application/x-npy' }))
            .rps;
          return rps * d.seconds;
        });
        if (s.server) r.gc += (await gcSeconds(s.server)) - gc0;
        r.seconds += d.seconds;
        r.rps.push(rps);
        r.cpu.push(cpu);
      }
    }
    const out = Object.fromEntries(
      [...runs].map(([name, r]) => [
        name,
        { rps: median(r.rps), cpuMicros: median(r.cpu), gcShare: r.gc / r.seconds, turns: { rps: r.rps, cpu: r.cpu } },
      ]),
    );
    const base = out.inProcess;
    return {
      npyBytes: npy.length,
      connections: 4,
      ...out,
      ratios: {
        ringRps: out.ring.rps / base.rps,
        socketRps: out.socket.rps / base.rps,
        ringCpu: out.ring.cpuMicros / base.cpuMicros,
        socketCpu: out.socket.cpuMicros / base.cpuMicros,
      },
    };
  } finally {
    baseline.stop();
    await ring.stop();
    await socket.stop();
  }
}

const USAGE = benchUsage(
  'node dist/scripts/bench/data-plane/body-handoff.js',
  '.npy at 4 connections: body rings on, off, and the in-process baseline, in turns.',
);

if (require.main === module) runBench(USAGE, benchBodyHandoff);
