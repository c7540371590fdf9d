/**
 * The memory bounds of the hardening and boundary cases, kept out of the test suite (issue 46): how
 * much a server's RSS grows is a measurement, which a busy machine, a collector running late or
 * another Node release moves without anything being wrong. The tests keep what these cases answer
 * and leave behind (statuses, processes, files); here, each against a CLI server of its own, the
 * same cases are also held to the RSS bounds they were written with. `npm run soak` runs them with
 * the other long cases; alone: `node dist/scripts/hardening/memory-bounds.js`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { status as Status, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { behaviourHandler } from '../../harness/fault-handlers';
import { grpcClients, unary } from '../../harness/grpc-clients';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { kS3Env, LocalS3 } from '../../harness/local-s3';
import { addModel, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { startCliServer, withCliServer, type CliServer } from '../../harness/cli-server';
import { descendantsOf, rssBytes, waitFor } from '../../harness/process-probes';
import { rawExchange } from '../../harness/raw-http';
import { tarHeader, tgz, writeTgz } from '../../harness/tar-archives';
import { tempDir } from '../../harness/test-server';
import { CaseReport } from './report';

const kMiB = 2 ** 20;
const mib = (n: number) => `${(n / kMiB).toFixed(1)} MiB`;

/** Past the server's request-size limit (6 553 500 bytes) by 1 MiB. */
const kMaxRequestSize = 6_553_500;

/** T-H1's bodies past a limit, declared or chunked, on invoke (model `m`) and on management. */
export function oversizedBodies(): Array<[string, Buffer]> {
  const over = Buffer.alloc(kMaxRequestSize + kMiB, 'a');
  return [
    // Only the headers are sent: a 413 that waited for the body would never come.
    [
      'a declared 7 MiB invoke body',
      Buffer.from(
        `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${7 * kMiB}\r\n\r\n`,
      ),
    ],
    // Past the limit, and never finished: the 413 cannot be waiting for its end.
    [
      'a chunked invoke body crossing the limit',
      Buffer.concat([
        Buffer.from(
          'POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
        ),
        Buffer.from(`${over.length.toString(16)}\r\n`),
        over,
      ]),
    ],
    [
      'a 1 MB POST /models',
      Buffer.concat([
        Buffer.from(
          `POST /models HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${kMiB}\r\n\r\n{"model_name":"x","url":"`,
        ),
        Buffer.alloc(kMiB - 29, 'a'),
        Buffer.from('"}'),
      ]),
    ],
  ];
}

/**
 * What is wrong with the server's answer to one oversized body: it must be one 413
 * MME_ERR_PAYLOAD_TOO_LARGE on a connection it then closes. The client reads only once it has
 * written everything: it must still find the 413, not a reset connection (a server closing on
 * unread input makes the kernel send RST).
 */
export async function oversizedBodyProblems(port: number, [what, bytes]: [string, Buffer]): Promise<string[]> {
  const x = await rawExchange(port, bytes, { timeoutMs: 10_000, readAfterWrite: true });
  const statuses = x.responses.map((r) => r.status);
  if (statuses.length !== 1 || statuses[0] !== 413)
    return [`${what}: answered ${JSON.stringify(statuses)} ${x.error ?? ''}, not one 413`];
  const problems: string[] = [];
  const code = (JSON.parse(x.responses[0].body.toString()) as { errorCode?: string }).errorCode;
  if (code !== 'MME_ERR_PAYLOAD_TOO_LARGE') problems.push(`${what}: errorCode ${code}`);
  if (!x.closed) problems.push(`${what}: the connection was left open`);
  return problems;
}

/** The three bombs of T-S5, written into `dir`: what each is, its file, and the refusal's message. */
export async function writeBombs(dir: string): Promise<Array<[string, string, RegExp]>> {
  const ratio = path.join(dir, 'zeros.tar.gz');
  // Declares 3 GiB (under the 4 GiB cap) and carries 32 MiB of zeros: about 32 KiB on disk.
  fs.writeFileSync(
    ratio,
    gzipSync(Buffer.concat([tarHeader({ path: 'zeros.bin' }, 3 * 2 ** 30), Buffer.alloc(32 * kMiB)]), { level: 9 }),
  );
  const declared = path.join(dir, 'declared.tar.gz');
  fs.writeFileSync(declared, gzipSync(Buffer.concat([tarHeader({ path: 'huge.bin' }, 100e9), Buffer.alloc(kMiB)])));
  const entries = path.join(dir, 'entries.tar.gz');
  const chunk = Buffer.concat(Array<Buffer>(2048).fill(tarHeader({ path: 'e' }, 0)));
  await writeTgz(entries, Array<Buffer>(Math.ceil(1_000_000 / 2048)).fill(chunk), 1);
  return [
    ['a gzip of zeros declaring 3 GiB', ratio, /expands more than 200:1/],
    ['one entry declaring 100 GB', declared, /expands beyond 4 GiB/],
    ['a million empty entries', entries, /more than 10000 entries/],
  ];
}

interface Measured {
  problems: string[];
  summary: string;
}

/** `problems` when `grown` passes `bound`, in the words of `what`. */
function bounded(grown: number, bound: number, what: string): Measured {
  return {
    problems: grown < bound ? [] : [`${what} grew ${mib(grown)} (bound ${mib(bound)})`],
    summary: `${what} ${grown < 0 ? 'shrank' : 'grew'} ${mib(Math.abs(grown))}`,
  };
}

/** T-H1: 100 refused bodies after 30 to warm up (the allocator's high-water mark rises once). */
function refusedBodies(): Promise<Measured> {
  return withCliServer('', async (s, store) => {
    const problems: string[] = [];
    const load = await loadModel(s, 'm', writeModelDir(store, 'm', addModel()));
    if (load.status !== 200) return { problems: [`load: ${load.text}`], summary: '' };
    const port = Number(new URL(s.url).port);
    const kinds = oversizedBodies();
    for (let i = 0; i < 30; i++) problems.push(...(await oversizedBodyProblems(port, kinds[i % kinds.length])));
    const before = rssBytes(s.pid);
    for (let i = 0; i < 100; i++) problems.push(...(await oversizedBodyProblems(port, kinds[i % kinds.length])));
    const m = bounded(rssBytes(s.pid) - before, 10 * kMiB, 'server RSS over 100 refused bodies');
    return { problems: [...problems, ...m.problems], summary: m.summary };
  });
}

/** T-L4: the server and its worker together give back at least 80 % of the worker's RSS at an unload. */
function unloadFrees(): Promise<Measured> {
  return withCliServer('', async (s, store) => {
    const archive = path.join(store, 'a.tar.gz');
    fs.writeFileSync(archive, tgz([{ path: 'model.onnx', data: mlpModel({ sizes: [256, 4096, 256], seed: 3 }) }]));
    if ((await loadModel(s, 'a', archive)).status !== 200) return { problems: ['the model did not load'], summary: '' };
    for (let i = 0; i < 10; i++) await invoke(s, 'a', [Array(256).fill(1)]);
    const [worker] = descendantsOf(s.pid);
    const rssWorker = rssBytes(worker);
    const before = rssBytes(s.pid) + rssWorker;
    const unload = await request(`${s.url}/models/a`, { method: 'DELETE' });
    if (unload.status !== 200) return { problems: [`unload: ${unload.text}`], summary: '' };
    const drop = before - rssBytes(s.pid);
    return {
      problems: drop >= 0.8 * rssWorker ? [] : [`RSS dropped ${mib(drop)} of the worker's ${mib(rssWorker)}`],
      summary: `RSS dropped ${mib(drop)} of the worker's ${mib(rssWorker)}`,
    };
  });
}

/** T-S5: three refused decompression bombs, after one to warm the code paths. */
function bombs(): Promise<Measured> {
  return withCliServer('', async (s, store) => {
    const problems: string[] = [];
    const list = await writeBombs(store);
    const refused = async ([what, file, message]: [string, string, RegExp]) => {
      const res = await loadModel(s, 'bomb', file);
      if (res.status !== 400 || !message.test(res.text)) problems.push(`${what}: ${res.status} ${res.text}`);
    };
    await refused(list[1]);
    const before = rssBytes(s.pid);
    for (const bomb of list) await refused(bomb);
    const m = bounded(rssBytes(s.pid) - before, 20 * kMiB, 'server RSS over three bombs');
    return { problems: [...problems, ...m.problems], summary: m.summary };
  });
}

/** model_repository: a 200 MB artifact streams to disk; the server never holds it (peak during the download). */
async function bigDownload(): Promise<Measured> {
  const s3 = await LocalS3.start();
  try {
    const local = tempDir('mme-big-');
    const padding = path.join(local, 'padding.bin');
    const fd = fs.openSync(padding, 'w');
    for (let i = 0; i < 50; i++) fs.writeSync(fd, Buffer.alloc(4 * kMiB, 3));
    fs.closeSync(fd);
    await s3.putModelDir('rss', 'small', addModel());
    await s3.putModelDir('rss', 'big', addModel());
    await s3.putFile('rss/big/padding.bin', padding);
    fs.rmSync(local, { recursive: true, force: true });
    const s = await startCliServer(
      s3.properties('rss', `model_cache_dir=${tempDir('mme-disk-cache-')}\nload_wait_timeout=300`),
      { env: kS3Env },
    );
    try {
      const row = { inputs: { x: [Array(16).fill(0)] } };
      // Warm: the SDK, its connection pool and a worker are in memory before the baseline.
      if ((await invoke(s, 'small', row)).status !== 200) return { problems: ['the small model failed'], summary: '' };
      const baseline = rssBytes(s.pid);
      let peak = baseline;
      let done = false;
      const big = invoke(s, 'big', row).finally(() => (done = true));
      await waitFor(
        () => {
          peak = Math.max(peak, rssBytes(s.pid));
          return done;
        },
        'the 200 MB model to load',
        300_000,
        10,
      );
      const answer = await big;
      const m = bounded(peak - baseline, 100 * kMiB, 'server RSS during a 200 MiB download (peak)');
      return { problems: [...(answer.status === 200 ? [] : [answer.text]), ...m.problems], summary: m.summary };
    } finally {
      await s.stop();
    }
  } finally {
    await s3.close();
  }
}

/** A CLI server with gRPC on a port of its own, and that port. */
async function grpcServer(store: string): Promise<{ s: CliServer; port: number }> {
  const s = await startCliServer('grpc_inference_port=0', { store });
  let port = 0;
  await waitFor(() => {
    const line = s.lines.find((l) => /gRPC inference API .* listening on /.test(l));
    port = line ? Number(/:(\d+)/.exec(line.slice(line.indexOf('listening on')))?.[1]) : 0;
    return port > 0;
  }, 'the gRPC listener');
  return { s, port };
}

/** gRPC BYTES of 1 000 000 empty elements: refused before decoding (they were +268 MiB, kept, when decoded). */
async function millionEmptyBytes(): Promise<Measured> {
  const store = tempDir('mme-store-');
  const { s, port } = await grpcServer(store);
  const c = grpcClients(port);
  try {
    const mlp = await loadModel(s, 'mlp', writeModelDir(store, 'mlp', mlpModel({ sizes: [4, 8, 3] })));
    if (mlp.status !== 200) return { problems: [`load: ${mlp.text}`], summary: '' };
    const req = {
      model_name: 'mlp',
      inputs: [
        {
          name: 'input',
          datatype: 'BYTES',
          shape: [1_000_000],
          contents: { bytes_contents: Array<Buffer>(1_000_000).fill(Buffer.alloc(0)) },
        },
      ],
    };
    const ask = (r: unknown) =>
      unary(c.kserve, 'ModelInfer', r).then(
        () => Status.OK,
        (e: ServiceError) => e.code,
      );
    // Warm: a valid request first, so that the baseline has the gRPC paths' first allocations.
    const valid = {
      model_name: 'mlp',
      inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 4], contents: { fp32_contents: [1, 2, 3, 4] } }],
    };
    if ((await ask(valid)) !== Status.OK) return { problems: ['a valid ModelInfer failed'], summary: '' };
    const before = rssBytes(s.pid);
    const codes = [await ask(req), await ask(req)];
    const m = bounded(rssBytes(s.pid) - before, 64 * kMiB, 'server RSS over two requests');
    const refused = codes.every((code) => code === Status.INVALID_ARGUMENT);
    return {
      problems: [...(refused ? [] : [`answered ${codes.map((x) => Status[x])}`]), ...m.problems],
      summary: m.summary,
    };
  } finally {
    c.close();
    await s.stop();
  }
}

/**
 * TorchServe StreamPredictions2: a stream writing 400 requests of 1 MiB far faster than the model
 * answers (job_queue_size 4) costs the server what it holds of them, not what was sent.
 */
async function streamFlood(): Promise<Measured> {
  const store = tempDir('mme-store-');
  const { s, port } = await grpcServer(store);
  const c = grpcClients(port);
  try {
    const dir = writeModelDir(store, 'slow', addModel(), { 'handler.js': behaviourHandler });
    const load = await loadModel(s, 'slow', dir, { job_queue_size: 4 });
    if (load.status !== 200) return { problems: [`load: ${load.text}`], summary: '' };
    const message = {
      model_name: 'slow',
      sequenceId: 's',
      input: { data: Buffer.from(JSON.stringify({ sleepMs: 20, fill: 'p'.repeat(kMiB) })) },
    };
    // A warm-up request first: the allocations of a first call are not the stream's.
    await unary(c.torchserve, 'Predictions', message);
    const rss0 = rssBytes(s.pid);
    let peak = rss0;
    let answered = 0;
    const call = c.torchserve.StreamPredictions2() as ClientDuplexStream<unknown, unknown>;
    call.on('data', () => {
      answered++;
      peak = Math.max(peak, rssBytes(s.pid));
    });
    const closed = new Promise<void>((resolve) => {
      call.on('error', () => resolve());
      call.on('end', resolve);
    });
    for (let i = 0; i < 400; i++) call.write(message);
    await waitFor(() => answered >= 40, '40 answers', 120_000);
    call.cancel();
    await closed;
    return bounded(peak - rss0, 150 * kMiB, 'server RSS while a 400 MiB stream ran (peak)');
  } finally {
    c.close();
    await s.stop();
  }
}

const kCases: Array<[string, () => Promise<Measured>]> = [
  ['T-H1 body_limits: no memory kept by 100 refused bodies', refusedBodies],
  ["T-L4 unload: the worker's memory is given back", unloadFrees],
  ['T-S5 decompression_bomb: little server memory', bombs],
  ['model_repository: a 200 MB artifact is never held in memory', bigDownload],
  ['gRPC: 1 000 000 empty BYTES elements cost the server no memory', millionEmptyBytes],
  ['gRPC StreamPredictions2: a flooding stream costs what the server holds of it', streamFlood],
];

export async function reportMemoryBounds(report: CaseReport): Promise<void> {
  for (const [what, run] of kCases) {
    const r = await run();
    report.add(what, r.problems, r.summary);
  }
}

const kUsage = `Usage: node dist/scripts/hardening/memory-bounds.js

The hardening, repository and gRPC boundary cases whose server RSS the tests do not bound (refused
bodies, an unload, decompression bombs, a 200 MB download, a million empty gRPC elements, a flooding
gRPC stream), each against a CLI server of its own and held to its RSS bound. Fails on any excess.`;

if (require.main === module) void CaseReport.run(kUsage, reportMemoryBounds);
