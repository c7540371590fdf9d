/**
 * The cache live: a Zipf-distributed stream of invokes over 100 models in model_store with room
 * for 20 (max_loaded_models), through a real server with on-demand loading. Reports the
 * ModelCacheHit ratio and latency percentiles, per eviction policy.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { resolveConfig } from '../../src/config/resolve';
import { MmeServer } from '../../src/server/mme-server';
import { seededRandom, zipfSampler } from '../cache-sim/random';
import { runScript } from './harness';
import { percentiles } from './latency';
import { MLP_STORE_BODY, writeMlpStore } from './mlp-store';

export interface CacheLive {
  policy: string;
  requests: number;
  hitRatio: number;
  p50Ms: number;
  p99Ms: number;
  evictions: number;
}

export async function benchCacheLive(policy: 'lru' | 'gdsf', requests = process.env.BENCH_QUICK ? 400 : 3000): Promise<CacheLive> {
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-cache-live-'));
  writeMlpStore(store, 100);
  const config = resolveConfig({
    fileText: ['inference_address=http://127.0.0.1:0', 'management_address=http://127.0.0.1:0', `model_store=${store}`,
      'default_workers_per_model=1', 'model_cache=on', 'max_loaded_models=20', `eviction_policy=${policy}`].join('\n'),
    configFile: null, env: {}, argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
  const server = await new MmeServer(config, { log: () => undefined }).start();
  const url = server.url('inference');
  const next = zipfSampler(100, 1.0, seededRandom(7));
  const body = MLP_STORE_BODY;
  const samples: number[] = [];
  try {
    let sent = 0;
    const client = async () => {
      while (sent < requests) {
        sent++;
        const model = `m${next()}`;
        const t0 = performance.now();
        const res = await fetch(`${url}/models/${model}/invoke`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${model}: ${res.status}`);
        samples.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: 4 }, client));
    const { hits, misses, evictions } = server.manager.stats;
    const p = percentiles(samples);
    return { policy, requests, hitRatio: hits / (hits + misses), p50Ms: p.p50, p99Ms: p.p99, evictions };
  } finally {
    await server.close(0);
    fs.rmSync(store, { recursive: true, force: true });
  }
}

if (require.main === module) runScript(async () => [await benchCacheLive('lru'), await benchCacheLive('gdsf')], (r) => console.table(r));
