/**
 * Noisy neighbour: one slow model (a wide MLP, tens of ms a run) under 4 connections, and tiny
 * models invoked at concurrency 1 in rotation, in one server; run once with every model in one
 * shared host and once with every model in a process of its own. Prints the tiny models' req/s
 * and latency percentiles in each mode, and the shared host's per-model CPU share from describe.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { mlpModel } from '../../test/fixtures/onnx-models';
import { postJson, runScript, startServer } from './harness';
import { percentiles } from './latency';

const kTiny = 6;
const kSlowBody = JSON.stringify({ inputs: { input: Array.from({ length: 8 }, () => Array.from({ length: 512 }, (_, i) => i % 7)) } });
const kTinyBody = JSON.stringify({ inputs: { input: [[1, 2, 3, 4]] } });

interface Mode {
  tinyRps: number;
  tinyP50Ms: number;
  tinyP99Ms: number;
  slowRps: number;
  cpuShare: Record<string, unknown>;
}

async function runMode(mode: 'shared' | 'dedicated', seconds: number): Promise<Mode> {
  const server = await startServer([`worker_mode=${mode}`, 'shared_workers=1', 'model_cache=off', 'spare_workers=0']);
  try {
    const write = (name: string, bytes: Uint8Array) => {
      fs.mkdirSync(path.join(server.store, name));
      fs.writeFileSync(path.join(server.store, name, 'model.onnx'), bytes);
    };
    write('slow', mlpModel({ sizes: [512, 4096, 4096, 3], seed: 1 }));
    for (let i = 0; i < kTiny; i++) write(`tiny${i}`, mlpModel({ sizes: [4, 8, 3], seed: i + 2 }));
    for (const name of ['slow', ...Array.from({ length: kTiny }, (_, i) => `tiny${i}`)]) {
      const res = await postJson(`${server.url}/models`, { model_name: name, url: path.join(server.store, name), initial_workers: 1 });
      if (res.status !== 200) throw new Error(`load ${name}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const slow = autocannon({ url: `${server.url}/models/slow/invoke`, connections: 4, duration: seconds + 1, method: 'POST', body: kSlowBody, headers: { 'content-type': 'application/json' } });
    const tiny = await rotate(server.url, seconds);
    const slowResult = await slow;
    const cpuShare: Record<string, unknown> = {};
    for (const name of ['slow', 'tiny0']) {
      const d = (await (await fetch(`${server.url}/models/${name}`)).json()) as { workers: Array<{ cpuShare?: unknown }> };
      cpuShare[name] = d.workers[0]?.cpuShare ?? null;
    }
    return { ...tiny, slowRps: slowResult.requests.average, cpuShare };
  } finally {
    await server.stop();
  }
}

/** Tiny requests at concurrency 1 over one keep-alive connection, rotating over the tiny models, for `seconds`. */
async function rotate(url: string, seconds: number): Promise<Pick<Mode, 'tinyRps' | 'tinyP50Ms' | 'tinyP99Ms'>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(url);
  const once = (model: string) => new Promise<number>((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ agent, host: target.hostname, port: target.port, path: `/models/${model}/invoke`, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(kTinyBody) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(kTinyBody);
  });
  const samples: number[] = [];
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) samples.push(await once(`tiny${samples.length % kTiny}`));
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  const p = percentiles(samples);
  return { tinyRps: samples.length / elapsed, tinyP50Ms: p.p50, tinyP99Ms: p.p99 };
}

runScript('node dist/scripts/bench/noisy-neighbour.js [seconds]', async () => {
  const seconds = Number(process.argv[2] ?? 10);
  return { shared: await runMode('shared', seconds), dedicated: await runMode('dedicated', seconds) };
});
