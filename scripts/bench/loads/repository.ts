/**
 * `npm run bench:repository`: what model_repository costs. Cold first request (invoke of a model in
 * no cache: download + load + answer) for a 1 MB and a 100 MB model from a local S3 server
 * (s3rver), against the same model's first request from model_store on local disk; and the
 * download throughput (from the server's own RepositoryDownload* metrics) against `cp` of the
 * same bytes on this machine.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { addModel } from '../../../harness/onnx-models';
import { kS3Env, LocalS3 } from '../../../harness/local-s3';
import { benchUsage, runBench, startBenchServer } from '../kit/bench-run';
import { median } from '../../../harness/statistics';
import { postJson } from '../../../harness/http-requests';

const kMiB = 2 ** 20;
const kInput = { inputs: { x: [Array(16).fill(0)] } };

export interface RepositoryFigure {
  model: string;
  diskMs: number;
  repositoryMs: number;
  overhead: string;
  downloadMiBps: number;
  cpMiBps: number;
}

async function firstRequestMs(url: string, name: string): Promise<number> {
  const t0 = performance.now();
  const res = await postJson(`${url}/models/${name}/invoke`, kInput);
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return performance.now() - t0;
}

function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/** MiB/s of `cp` copying `file` (already in the page cache, as the S3 server's copy is). */
function cpMiBps(file: string): number {
  const to = `${file}.cp`;
  const t0 = performance.now();
  const r = spawnSync('cp', [file, to]);
  const ms = performance.now() - t0;
  fs.rmSync(to, { force: true });
  if (r.status !== 0) throw new Error(`cp failed: ${r.stderr}`);
  return fs.statSync(file).size / kMiB / (ms / 1000);
}

export async function benchRepository(reps = process.env.BENCH_QUICK ? 2 : 3): Promise<RepositoryFigure[]> {
  Object.assign(process.env, kS3Env);
  const s3 = await LocalS3.start();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-bench-repo-'));
  const server = await startBenchServer([
    s3.properties('bench'),
    `model_cache_dir=${path.join(work, 'cache')}`,
    'load_wait_timeout=300',
    'spare_workers=1',
  ]);
  const out: RepositoryFigure[] = [];
  try {
    // Untimed: the first load of each kind warms the server's code paths and the SDK's connection.
    await s3.putModelDir('bench', 'warm', addModel());
    fs.mkdirSync(path.join(server.store, 'local-warm'));
    fs.writeFileSync(path.join(server.store, 'local-warm', 'model.onnx'), addModel());
    await firstRequestMs(server.url, 'local-warm');
    await firstRequestMs(server.url, 'warm');
    for (const mb of [1, 100]) {
      const padding = path.join(work, `padding-${mb}.bin`);
      fs.writeFileSync(padding, Buffer.alloc(mb * kMiB, 5));
      const disk: number[] = [];
      const repo: number[] = [];
      let bytes = 0;
      let seconds = 0;
      for (let i = 0; i < reps; i++) {
        const name = `m${mb}-${i}`;
        await s3.putModelDir('bench', name, addModel());
        await s3.putFile(`bench/${name}/padding.bin`, padding);
        const local = path.join(server.store, `local-${name}`);
        fs.mkdirSync(local);
        fs.writeFileSync(path.join(local, 'model.onnx'), addModel());
        fs.copyFileSync(padding, path.join(local, 'padding.bin'));
        disk.push(await firstRequestMs(server.url, `local-${name}`));
        const before = await (await fetch(`${server.url}/metrics`)).text();
        repo.push(await firstRequestMs(server.url, name));
        const after = await (await fetch(`${server.url}/metrics`)).text();
        bytes +=
          metric(after, 'mme_repository_download_bytes_total') -
          (metric(before, 'mme_repository_download_bytes_total') || 0);
        seconds +=
          metric(after, 'mme_model_downloading_time_seconds_sum') -
          (metric(before, 'mme_model_downloading_time_seconds_sum') || 0);
      }
      const diskMs = median(disk);
      const repositoryMs = median(repo);
      out.push({
        model: `${mb} MB (model.onnx + padding)`,
        diskMs: Math.round(diskMs),
        repositoryMs: Math.round(repositoryMs),
        overhead: `${(repositoryMs / diskMs).toFixed(1)}x`,
        downloadMiBps: Math.round(bytes / kMiB / seconds),
        cpMiBps: Math.round(median(Array.from({ length: reps }, () => cpMiBps(padding)))),
      });
    }
  } finally {
    await server.stop();
    await s3.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
  return out;
}

const USAGE = benchUsage(
  'npm run bench:repository',
  'Cold first request of a 1 MB and a 100 MB model from a local S3 server (s3rver) against local disk, and download throughput against cp.',
);

if (require.main === module)
  runBench(
    USAGE,
    () => benchRepository(),
    (rows) => console.table(rows),
  );
