/**
 * Streaming: time to first chunk against time to the whole response, for the example
 * text-generator (one model run per token, 32 tokens, each sent as it is made).
 */
import fs from 'node:fs';
import path from 'node:path';
import { streamInvoke } from '../../../harness/stream-client';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { median } from '../../../harness/statistics';
import { postJson } from '../../../harness/http-requests';
import { kRepoRoot } from '../../../harness/repo-root';

export interface StreamingResult {
  tokens: number;
  firstChunkMs: number;
  totalMs: number;
}

export async function benchStreaming(requests = process.env.BENCH_QUICK ? 10 : 50): Promise<StreamingResult> {
  const server = await startBenchServer();
  try {
    const source = path.join(kRepoRoot, 'model-store', 'text-generator');
    const dir = path.join(server.store, 'text-generator');
    fs.cpSync(source, dir, { recursive: true });
    const res = await postJson(`${server.url}/models`, { model_name: 'gen', url: dir, initial_workers: 1 });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    const body = JSON.stringify({ prompt: 'hello', max_tokens: 32 });
    const first: number[] = [];
    const total: number[] = [];
    for (let i = 0; i < requests + 3; i++) {
      const r = await streamInvoke(`${server.url}/models/gen/invoke`, body);
      if (r.status !== 200 || !r.complete) throw new Error(`stream answered ${r.status}`);
      if (i < 3) continue;
      first.push(r.firstChunkMs);
      total.push(r.totalMs);
    }
    return { tokens: 32, firstChunkMs: median(first), totalMs: median(total) };
  } finally {
    await server.stop();
  }
}

const USAGE = benchUsage(
  'node dist/scripts/bench/data-plane/streaming.js',
  'Time to first chunk against the whole response for the example text-generator.',
);

if (require.main === module) runBench(USAGE, benchStreaming, (r) => console.log(r));
