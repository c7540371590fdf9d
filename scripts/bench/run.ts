/** `npm run bench`: every benchmark, printed and written to bench-results/latest.{md,json}. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchBatching } from './batching';
import { benchPreloadMemory } from './preload-memory';

async function main(): Promise<void> {
  const ortVersion = require('onnxruntime-node/package.json').version as string;
  const header = `${new Date().toISOString()} · ${os.cpus()[0]?.model ?? 'cpu'} × ${os.availableParallelism()} · ${Math.round(os.totalmem() / 2 ** 30)} GiB · Node ${process.version} · onnxruntime-node ${ortVersion}`;
  const batching = await benchBatching();
  const preload = await benchPreloadMemory();
  const md = [
    `Measured ${header}`,
    '',
    '| figure | value | target |',
    '|---|---|---|',
    `| batching: mid MLP 512→4096→512, c=32, batch_size 16 vs 1 | ${batching.ratio.toFixed(2)}× (${batching.rps16.toFixed(0)} vs ${batching.rps1.toFixed(0)} req/s; p99 ${batching.p99_16} vs ${batching.p99_1} ms) | ≥ 2.5× ${batching.ratio >= 2.5 ? '✅' : '❌'} |`,
    ...preload.map((r) => `| preload_model memory, 4 workers, ${r.model} (${r.weightsMB.toFixed(0)} MB weights) | ${r.onMB.toFixed(0)} MB on vs ${r.offMB.toFixed(0)} MB off | — |`),
  ].join('\n');
  console.log(md);
  const out = path.join(__dirname, '..', '..', '..', 'bench-results');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'latest.md'), `${md}\n`);
  fs.writeFileSync(path.join(out, 'latest.json'), `${JSON.stringify({ measured: header, batching, preload }, null, 2)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
