/**
 * T-H4 http_fuzz: fast-check generates raw HTTP/1.x requests (method, path, version, headers,
 * body; framing kept right so that every request is complete) over every route, and sends each on
 * its own connection to a CLI server. Every answer must be valid HTTP with a status below 500
 * (503 allowed); afterwards the server must answer /ping, hold no more file descriptors than before
 * and run exactly the workers its models need. `npm run fuzz` runs 50 000 cases (Triton's
 * L0_http_fuzz size); the test suite runs a short version.
 *
 * `npm run fuzz` then runs issue 21's boundary fuzz (./boundary-fuzz.ts) for a fixed number of
 * operations, in dedicated and shared worker mode: `--help` lists the options.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { withCliServer } from '../../harness/cli-server';
import { descendantsOf, fdCount, isAlive, waitFor } from '../../harness/process-probes';
import { rawExchange } from '../../harness/raw-http';
import { loadModel, request } from '../../harness/http-requests';
import { Flags, runCli, UsageError } from '../cli-flags';
import { fuzzBoundary, type FuzzReport, type WorkerMode } from './boundary-fuzz';
import { CaseReport } from './report';

export interface FuzzOptions {
  runs: number;
  seed?: number;
  progress?: (line: string) => void;
}

export interface FuzzResult {
  /** How many answers of each status the cases got. */
  statuses: Record<number, number>;
  seed: number;
}

/** The loaded model: a name no generated string will hit by chance, so only its known spelling reaches it. */
const kModel = 'fuzz-target-3c9e1f';

const tchar = fc.constantFrom(
  ..."!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".split(''),
);
const token = fc.string({ unit: tchar, minLength: 1, maxLength: 16 });
const printable = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      fc.constant('\t'),
    ),
    maxLength,
  });
const anyText = (maxLength: number) => fc.string({ unit: 'binary', maxLength });

const method = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT'),
  },
  { weight: 1, arbitrary: token },
);
const name = fc.oneof(
  fc.constantFrom(
    kModel,
    'ghost',
    '..',
    '%2e%2e',
    '%2F',
    '..%2F..%2Fetc',
    'a'.repeat(300),
    '%00',
    '%ZZ',
    '__proto__',
    'constructor',
  ),
  anyText(40).map(encodeURIComponent),
);
const segment = fc.string({ unit: fc.constantFrom(...'/abcmodels.%2F0?&=#;~'.split('')), maxLength: 60 });
const path = fc.oneof(
  fc.constantFrom(
    '/ping',
    '/models',
    '/invocations',
    '/metrics',
    '/',
    '*',
    '//ping',
    '/models/',
    `http://localhost/models/${kModel}`,
  ),
  name.map((n) => `/models/${n}`),
  name.map((n) => `/models/${n}/invoke`),
  name.map((n) => `/predictions/${n}`),
  segment.map((s) => `/${s}`),
);
// Small numbers only: a fuzzer that scales a model to 10 000 workers tests the machine, not the parser.
const queryValue = fc.oneof(
  fc.constantFrom('', '0', '1', '2', '-1', '1e3', 'true', 'false', '%ZZ', '..%2F..%2Fetc', 'http://127.0.0.1:1/x'),
  anyText(20).map(encodeURIComponent),
);
const queryKey = fc.oneof(
  fc.constantFrom(
    'url',
    'model_name',
    'limit',
    'next_page_token',
    'min_worker',
    'max_worker',
    'synchronous',
    'initial_workers',
    'batch_size',
    'memory',
    'response_timeout',
  ),
  token,
);
const query = fc
  .array(fc.tuple(queryKey, queryValue), { maxLength: 4 })
  .map((kv) => (kv.length ? `?${kv.map(([k, v]) => `${k}=${v}`).join('&')}` : ''));
const version = fc.constantFrom(
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/0.9',
  'HTTP/2.0',
  'HTTP/1.2',
  'http/1.1',
  'HTTP/1.10',
);
const headerName = fc
  .oneof(
    fc.constantFrom(
      'content-type',
      'accept',
      'x-amzn-sagemaker-target-model',
      'x-amzn-sagemaker-custom-attributes',
      'authorization',
      'expect',
      'connection',
      'content-encoding',
      'serve_multiplexed_model_id',
      'upgrade',
      'range',
      'cookie',
    ),
    token,
  )
  .filter((n) => !/^(content-length|transfer-encoding|host)$/i.test(n));
const headerValue = fc.oneof(
  fc.constantFrom(
    'application/json',
    'text/csv',
    'application/x-npy',
    '*/*',
    '100-continue',
    'close',
    'keep-alive',
    'gzip',
    'Bearer x',
    kModel,
    `${kModel}.tar.gz`,
  ),
  printable(200),
);
const host = fc.oneof(
  { weight: 8, arbitrary: fc.constant('localhost') },
  { weight: 1, arbitrary: fc.constantFrom('127.0.0.1', '[::1]', 'evil.example', '') },
  { weight: 1, arbitrary: printable(40) },
);
const body = fc.option(
  fc.oneof(
    fc.constant(JSON.stringify({ inputs: { x: [Array(16).fill(1)] } })),
    fc.constantFrom(
      '{}',
      '[]',
      'null',
      '{"model_name":"x","url":"/etc"}',
      `{"model_name":"${kModel}","url":"${kModel}"}`,
      '[[1,2]]',
      '{"inputs":',
    ),
    fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b).toString('latin1')),
    anyText(512),
  ),
  { nil: null },
);

interface Generated {
  method: string;
  target: string;
  version: string;
  host: string;
  headers: Array<[string, string]>;
  body: string | null;
  chunked: boolean;
}

const requestArb: fc.Arbitrary<Generated> = fc.record({
  method,
  target: fc.tuple(path, query).map(([p, q]) => `${p}${q}`),
  version,
  host,
  headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }),
  body,
  chunked: fc.boolean(),
});

/** The request as bytes; the body framed by Content-Length or as one chunk, so it is always complete. */
function render(r: Generated): Buffer {
  const lines = [`${r.method} ${r.target} ${r.version}`, `Host: ${r.host}`, ...r.headers.map(([k, v]) => `${k}: ${v}`)];
  let payload = Buffer.alloc(0);
  if (r.body !== null) {
    const bytes = Buffer.from(r.body, 'latin1');
    if (r.chunked) {
      lines.push('Transfer-Encoding: chunked');
      payload = Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n0\r\n\r\n')]);
    } else {
      lines.push(`Content-Length: ${bytes.length}`);
      payload = bytes;
    }
  }
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), payload]);
}

export function runFuzz(opts: FuzzOptions): Promise<FuzzResult> {
  const seed = opts.seed ?? Date.now() % 2 ** 31;
  return withCliServer('', async (s, store) => {
    const port = Number(new URL(s.url).port);
    const statuses: Record<number, number> = {};
    assert.equal((await loadModel(s, kModel, writeModelDir(store, kModel, addModel()))).status, 200);
    const fdsBefore = fdCount(s.pid);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(requestArb, async (r) => {
        const x = await rawExchange(port, render(r), { responses: 1, head: r.method === 'HEAD', timeoutMs: 10_000 });
        const final = x.responses.find((res) => res.status >= 200);
        assert.ok(
          final,
          `no response (${x.closed ? 'connection closed' : 'timed out'}${x.error ? `, ${x.error}` : ''})`,
        );
        assert.ok(
          final.status < 500 || final.status === 503,
          `status ${final.status}: ${final.body.toString().slice(0, 300)}`,
        );
        statuses[final.status] = (statuses[final.status] ?? 0) + 1;
        if (++n % 5000 === 0) opts.progress?.(`${n}/${opts.runs} cases`);
      }),
      { numRuns: opts.runs, seed, endOnFailure: true },
    );
    assert.ok(isAlive(s.pid), 'the server died');
    assert.equal((await request(`${s.url}/ping`)).status, 200);
    // Every case's connection is closed by now on our side; the server notices asynchronously.
    await waitFor(
      () => fdCount(s.pid) <= fdsBefore + 5,
      `the server's file descriptors to return to ${fdsBefore} (±5)`,
      10_000,
    );
    const models = (await request(`${s.url}/models`)).body.models as Array<{ modelName: string }>;
    let workers = 0;
    for (const m of models) workers += (await request(`${s.url}/models/${m.modelName}`)).body.workers.length;
    assert.equal(descendantsOf(s.pid).length, workers, 'worker processes differ from what the registry holds');
    return { statuses, seed };
  });
}

const kUsage = `Usage: npm run fuzz -- [options]

Two fuzzers against live CLI servers (127.0.0.1 only):
  T-H4 http_fuzz   generated raw HTTP/1.x requests over every route; every answer valid HTTP below 500.
  boundary         issue 21's rounds (harness/boundary/): canaries of known answer and
                   malformed requests over every codec and route (HTTP JSON/CSV/.npy, /v2 JSON and
                   binary, KServe and TorchServe gRPC), sent at once to a batching model. Reports
                   operations, distinct failures and server RSS start -> end.

Options:
  --ops N           boundary requests in all, split over the modes (default 100000)
  --mode M          dedicated, shared or both (default both)
  --concurrency N   boundary rounds in flight at once (default 1; the RSS bounds scale with it)
  --seed S          first round's seed; round i uses S + i (default: time-based)
  --http-cases N    T-H4 cases (default 50000; 0 skips it)
  --help            this text

Replay one boundary round: --ops 1 --concurrency 1 --http-cases 0 --mode <mode> --seed <round seed>`;

const kFlags = {
  ops: 'string',
  mode: 'string',
  concurrency: 'string',
  seed: 'string',
  'http-cases': 'string',
} as const;

function printBoundary(report: CaseReport, r: FuzzReport): void {
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
  const problems = [...r.findings.entries()].map(
    ([signature, f]) => `${signature} (×${f.count}; round seed ${f.roundSeed}: ${f.first.detail.slice(0, 240)})`,
  );
  report.add(
    `boundary fuzz, worker_mode=${r.mode}`,
    problems,
    `${r.operations} operations in ${r.rounds} rounds, ${r.seconds.toFixed(0)} s; ${r.findings.size} distinct failures; ` +
      `server RSS ${mib(r.serverRss.start)} -> ${mib(r.serverRss.end)} (peak ${mib(r.serverRss.peak)}); ` +
      `${r.mode === 'shared' ? 'host' : 'workers'} RSS ${mib(r.workerRss.start)} -> ${mib(r.workerRss.end)} (peak ${mib(r.workerRss.peak)})`,
  );
}

if (require.main === module) {
  runCli(kUsage, async (argv) => {
    const flags = Flags.parse(argv, kFlags);
    if (flags.positionals.length) throw new UsageError(`unexpected argument ${flags.positionals[0]}`);
    const ops = flags.int('ops', 100_000, 1);
    const httpCases = flags.int('http-cases', 50_000, 0);
    const concurrency = flags.int('concurrency', 1, 1);
    const seed = flags.int('seed', Date.now() % 2 ** 31, 0);
    const mode = flags.string('mode') ?? 'both';
    if (!['dedicated', 'shared', 'both'].includes(mode))
      throw new UsageError(`--mode must be dedicated, shared or both, got ${JSON.stringify(mode)}`);
    const modes: WorkerMode[] = mode === 'both' ? ['dedicated', 'shared'] : [mode as WorkerMode];
    await CaseReport.run(kUsage, async (report) => {
      if (httpCases > 0) {
        const t0 = Date.now();
        const r = await runFuzz({ runs: httpCases, progress: (l) => console.log(`  ${l}`) });
        report.add(
          `T-H4 http_fuzz, ${httpCases} cases`,
          [],
          `${((Date.now() - t0) / 1000).toFixed(0)} s, seed ${r.seed}, statuses ${JSON.stringify(r.statuses)}`,
        );
      }
      for (const m of modes) {
        console.log(`boundary fuzz, worker_mode=${m}: ${Math.ceil(ops / modes.length)} operations from seed ${seed}`);
        printBoundary(
          report,
          await fuzzBoundary({
            mode: m,
            operations: Math.ceil(ops / modes.length),
            seed,
            concurrency,
            progress: (l) => console.log(`  ${l}`),
          }),
        );
      }
    });
  });
}
