/**
 * The cache live: a Zipf-distributed stream of invokes over the models of model_store, through a
 * real server with on-demand loading, with room for some of them. Reports the ModelCacheHit ratio
 * and latency percentiles:
 * - per eviction policy: 100 models, room for 20 (max_loaded_models);
 * - per worker mode: 10 000 models under one memory budget, where room is what each mode's
 *   models cost.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { resolveConfig } from '../../../src/config/resolve';
import { MmeServer } from '../../../src/mme-server';
import { seededRandom, zipfSampler } from '../../../harness/random';
import { benchUsage, runBench } from '../kit/bench-run';
import { percentiles } from '../kit/latency';
import { MLP_STORE_BODY, writeMlpStore } from '../kit/mlp-store';

export interface CacheLive {
  policy: string;
  workerMode: 'dedicated' | 'shared';
  models: number;
  /** What limits the loaded models: "room for N" or "N MiB". */
  room: string;
  requests: number;
  hitRatio: number;
  p50Ms: number;
  p99Ms: number;
  evictions: number;
  /** Models loaded at the end. */
  loaded: number;
}

export interface CacheLiveOptions {
  policy: 'lru' | 'gdsf';
  workerMode?: 'dedicated' | 'shared';
  models?: number;
  /** max_loaded_models, or the memory budget in MiB. */
  room?: { maxLoaded: number } | { budgetMB: number };
  requests?: number;
}

export async function benchCacheLive(o: CacheLiveOptions): Promise<CacheLive> {
  const { policy, workerMode = 'dedicated', models = 100, room = { maxLoaded: 20 } } = o;
  const requests = o.requests ?? (process.env.BENCH_QUICK ? 400 : 3000);
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-cache-live-'));
  writeMlpStore(store, models);
  const limit = 'maxLoaded' in room ? `max_loaded_models=${room.maxLoaded}` : `model_memory_budget_mb=${room.budgetMB}`;
  const config = resolveConfig({
    fileText: [
      'inference_address=http://127.0.0.1:0',
      'management_address=http://127.0.0.1:0',
      `model_store=${store}`,
      'default_workers_per_model=1',
      'model_cache=on',
      limit,
      `eviction_policy=${policy}`,
      `worker_mode=${workerMode}`,
    ].join('\n'),
    configFile: null,
    env: {},
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
  const server = await new MmeServer(config, { log: () => undefined }).start();
  const url = server.url('inference');
  const next = zipfSampler(models, 1.0, seededRandom(7));
  const body = MLP_STORE_BODY;
  const samples: number[] = [];
  try {
    let sent = 0;
    const client = async () => {
      while (sent < requests) {
        sent++;
        const model = `m${next()}`;
        const t0 = performance.now();
        const res = await fetch(`${url}/models/${model}/invoke`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${model}: ${res.status}`);
        samples.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: 4 }, client));
    const { hits, misses, evictions } = server.manager.events.stats;
    const p = percentiles(samples);
    return {
      policy,
      workerMode,
      models,
      room: 'maxLoaded' in room ? `room for ${room.maxLoaded}` : `${room.budgetMB} MiB`,
      requests,
      hitRatio: hits / (hits + misses),
      p50Ms: p.p50,
      p99Ms: p.p99,
      evictions,
      loaded: server.manager.registry.servingCount(),
    };
  } finally {
    await server.close(0);
    fs.rmSync(store, { recursive: true, force: true });
  }
}

/** 10 000 models, one memory budget, each worker mode. */
export async function benchCacheLiveModes(): Promise<CacheLive[]> {
  const models = process.env.BENCH_QUICK ? 2000 : 10_000;
  const room = { budgetMB: 1024 };
  return [
    await benchCacheLive({ policy: 'gdsf', workerMode: 'dedicated', models, room }),
    await benchCacheLive({ policy: 'gdsf', workerMode: 'shared', models, room }),
  ];
}

const USAGE = benchUsage(
  'npm run bench:cache-live',
  'A Zipf stream of invokes through a real server with on-demand loading: hit ratio and latency per eviction policy.',
);

if (require.main === module) {
  runBench(
    USAGE,
    async () => [
      await benchCacheLive({ policy: 'lru' }),
      await benchCacheLive({ policy: 'gdsf' }),
      ...(await benchCacheLiveModes()),
    ],
    (r) => console.table(r),
  );
}
