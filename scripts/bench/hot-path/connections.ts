/**
 * Throughput and p99 against the number of connections: tiny MLP 16→32→4, one worker (the tuned
 * settings; others with MME_BENCH_SETTINGS, kit/bench-settings.ts), our server
 * and the in-process node:http + onnxruntime server, interleaved at each count so the load of the
 * shared machine hits both alike. What the hot path's single figure (16 connections) sits on.
 */
import path from 'node:path';
import { hammer } from '../../../harness/load-generator';
import { writeTinyMlp } from '../../../harness/onnx-models';
import { benchDurations, benchUsage, runBench, startBaseline, startBenchServer } from '../kit/bench-run';
import { settingsFromEnv, type BenchSettings } from '../kit/bench-settings';

export interface ConnectionsPoint {
  connections: number;
  server: 'ours' | 'in-process';
  rps: number;
  p50: number;
  p99: number;
}

export const kConnectionCounts = [1, 4, 16, 64] as const;

export async function benchConnections(settings: BenchSettings = settingsFromEnv()): Promise<ConnectionsPoint[]> {
  const server = await startBenchServer([], { settings });
  const dir = writeTinyMlp(server.store);
  const baseline = await startBaseline(path.join(dir, 'model.onnx'));
  try {
    await server.loadModel({ model_name: 'tiny', url: dir });
    const body = JSON.stringify({ inputs: { input: [Array.from({ length: 16 }, (_, i) => i / 16)] } });
    const d = benchDurations();
    const targets = [
      ['ours', `${server.url}/models/tiny/invoke`],
      ['in-process', baseline.url],
    ] as const;
    for (const [, url] of targets) await hammer(url, body, { connections: 16, seconds: d.warmupSeconds });
    const points: ConnectionsPoint[] = [];
    for (const connections of kConnectionCounts) {
      for (const [name, url] of targets) {
        const r = await hammer(url, body, { connections, seconds: d.seconds });
        if (r.errors + r.non2xx > 0)
          throw new Error(`${name} at ${connections} connections: ${r.errors} errors, ${r.non2xx} non-2xx`);
        points.push({ connections, server: name, rps: r.rps, p50: r.p50, p99: r.p99 });
      }
    }
    return points;
  } finally {
    baseline.stop();
    await server.stop();
  }
}

const USAGE = benchUsage(
  'node dist/scripts/bench/hot-path/connections.js',
  'Tiny-model throughput and p99 at 1, 4, 16 and 64 connections, ours and the in-process server.',
);

if (require.main === module) runBench(USAGE, () => benchConnections());
