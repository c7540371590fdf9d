/**
 * The boundary's invariants against a live server (issue 21), shared by the property test
 * (test/hardening/boundary-property.test.ts), `npm run fuzz` and the memory soak
 * (./boundary-memory.ts): rounds of canaries and malformed requests (harness/boundary/) sent at
 * once to a batching model, so that attacks share batches with the canaries. After each round
 * (runRound):
 *
 * - every canary got exactly its solo answer: the answer of a twin of the model that never batches
 *   (batch_size 1), asked first with the body whole, which must itself be the known answer x + 1;
 *   a canary sent in arbitrary chunks gets the same answer, or, when its chunks are too many for
 *   its bytes, the body reader's chunk-count refusal (chunkVerdict);
 * - every malformed request got a 4xx (INVALID_ARGUMENT over gRPC) whose body is at most 64 KiB;
 * - no worker or shared host process was replaced;
 * - nothing answered 5xx (implied by the first two).
 *
 * The scripts also bound memory, which the test does not (a measurement, and Node releases differ
 * in it): roundRssFailures, the server's RSS sampled through the round at most kServerRssGrowth
 * over its RSS at the round's start and the workers' (or host's) at most kWorkerRssGrowth (growth
 * within a round, so a failing round fails alone); retainedRss, what stays over the warm
 * baseline once the rounds are done.
 */
import fc from 'fast-check';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { answerRows, caseLabel, describeOutcome, refusalProblem } from '../../harness/boundary/answers';
import { callOf } from '../../harness/boundary/attacks';
import { knownAnswer } from '../../harness/boundary/bytes';
import { validCall, type Call } from '../../harness/boundary/calls';
import type { BoundaryCase, Round, ValidCase } from '../../harness/boundary/cases';
import { kRoundSize, roundArb } from '../../harness/boundary/generators';
import { chunkVerdict, isChunkRefusal, send, type Endpoints, type Outcome } from '../../harness/boundary/sending';
import { startCliServer, type CliServer } from '../../harness/cli-server';
import { grpcClients } from '../../harness/grpc-clients';
import { rssBytes, waitFor } from '../../harness/process-probes';
import { loadModel, request } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';

export type WorkerMode = 'dedicated' | 'shared';

/** The batching model: large enough batches and a delay long enough that a round's requests share them. */
export const kBatched = 'boundary-batched';
/** Its twin, same weights, one request per run: the solo answers. */
export const kSolo = 'boundary-solo';
/** A round fills exactly one batch; the delay only matters when a request of the round is refused before it queues. */
export const kBatching = { batch_size: kRoundSize, max_batch_delay: 500 };

/**
 * RSS growth that fails a round (and, once the rounds are done, what may stay over the warm
 * baseline). The server never parses a payload, so it holds at most a round's bodies (≤ 4 × 6 MB)
 * a few times over (gRPC decodes a message into a copy); the worker decodes them, and a request
 * that cannot run must cost it no more than its own bytes a few times over.
 */
export const kServerRssGrowth = 200 * 2 ** 20;
export const kWorkerRssGrowth = 256 * 2 ** 20;

export interface Failure {
  /** Stable across runs (no counts or ids): what "distinct failures" counts. */
  signature: string;
  detail: string;
  case?: BoundaryCase;
}

export interface BoundaryServer {
  mode: WorkerMode;
  cli: CliServer;
  grpcPort: number;
  /** Warm RSS, bytes: the server process, and its workers (or shared host) together. */
  baseline: { server: number; workers: number };
  close(): Promise<void>;
}

interface Worker {
  pid: number;
  status: string;
}

async function workersOf(cli: CliServer, model: string): Promise<Worker[]> {
  const res = await request(`${cli.managementUrl}/models/${model}`);
  return res.status === 200 ? (res.body.workers as Worker[]) : [];
}

/** Pids serving the two models, once each has a ready worker (after a crash, its replacement). */
async function readyPids(cli: CliServer): Promise<number[]> {
  let pids: number[] = [];
  await waitFor(
    async () => {
      const workers = [...(await workersOf(cli, kBatched)), ...(await workersOf(cli, kSolo))];
      pids = [...new Set(workers.map((w) => w.pid))].sort((a, b) => a - b);
      return workers.length === 2 && workers.every((w) => w.status === 'READY');
    },
    'both models to have a ready worker',
    60_000,
    50,
  );
  return pids;
}

const workerRss = (pids: readonly number[]) => pids.reduce((n, pid) => n + rssBytes(pid), 0);

export async function startBoundaryServer(mode: WorkerMode): Promise<BoundaryServer> {
  const store = tempDir('mme-boundary-');
  const cli = await startCliServer(
    [
      'grpc_inference_port=0',
      'model_cache=off',
      'metrics_per_model_dimension=true',
      // Dedicated workers take every body through their body rings (shared memory), the shared host over its socket:
      // the property covers both ways a body reaches a worker.
      ...(mode === 'shared'
        ? ['worker_mode=shared', 'shared_workers=1']
        : ['body_handoff_min_bytes=1', `body_handoff_dir=${tempDir('mme-rings-')}`]),
    ].join('\n'),
    { store },
  );
  try {
    await waitFor(
      () => cli.lines.some((l) => /gRPC inference API .* listening on /.test(l)),
      'the gRPC listener',
      30_000,
    );
    const grpcAddress = /gRPC inference API .* listening on (\S+)/.exec(
      cli.lines.find((l) => /gRPC inference API .* listening on /.test(l))!,
    )![1];
    const loads = await Promise.all([
      // A hung batch shows as a 504 within the round rather than a test timeout.
      loadModel(cli, kBatched, writeModelDir(store, kBatched, addModel()), { ...kBatching, response_timeout: 30 }),
      loadModel(cli, kSolo, writeModelDir(store, kSolo, addModel()), { batch_size: 1, response_timeout: 30 }),
    ]);
    for (const r of loads) if (r.status !== 200) throw new Error(`load failed: ${r.status} ${r.text}`);
    const srv: BoundaryServer = {
      mode,
      cli,
      grpcPort: Number(grpcAddress.split(':').pop()),
      baseline: { server: 0, workers: 0 },
      close: async () => {
        await cli.stop();
      },
    };
    // Warm-up: four rounds of canaries, so the baseline holds what serving costs when nothing is wrong.
    const warm = fc.sample(
      fc.array(
        roundArb.map((r) => r.cases.filter((c) => c.kind === 'valid')),
        { minLength: 4, maxLength: 4 },
      ),
      { seed: 1, numRuns: 1 },
    )[0];
    for (const cases of warm) await runRound(srv, { cases });
    const pids = await readyPids(cli);
    srv.baseline = { server: rssBytes(cli.pid), workers: workerRss(pids) };
    return srv;
  } catch (err) {
    await cli.stop();
    throw err;
  }
}

/** Samples the server's and the workers' RSS while a round runs. */
class Monitor {
  peakServer = 0;
  peakWorkers = 0;
  readonly serverRssAtStart: number;
  readonly workersRssAtStart: number;
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly serverPid: number,
    private readonly pids: readonly number[],
  ) {
    this.#sample();
    this.serverRssAtStart = this.peakServer;
    this.workersRssAtStart = this.peakWorkers;
    this.#timer = setInterval(() => this.#sample(), 25);
  }

  #sample(): void {
    this.peakServer = Math.max(this.peakServer, rssBytes(this.serverPid));
    this.peakWorkers = Math.max(this.peakWorkers, workerRss(this.pids));
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#sample();
  }
}

/** RSS at a round's start and its peak through the round, bytes. */
export interface RssSpan {
  start: number;
  peak: number;
}

export interface RoundReport {
  /** The round's correctness: answers, refusals, processes. */
  failures: Failure[];
  /** Requests sent: the solo answers and the round itself. */
  operations: number;
  serverRss: RssSpan;
  /** The workers' (or shared host's) together. */
  workerRss: RssSpan;
}

const MiB = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
const sameRows = (a: number[][], b: number[][]) =>
  a.length === b.length && a.every((r, i) => r.length === b[i].length && r.every((v, j) => Object.is(v, b[i][j])));

/** Runs one round (solo answers first, then every case at once) and returns what broke the invariants. */
export async function runRound(srv: BoundaryServer, round: Round): Promise<RoundReport> {
  const { cli } = srv;
  // A connection of its own (grpc-js otherwise shares one per target): a round that breaks its
  // connection fails alone, and the next round starts clean.
  const grpc = grpcClients(srv.grpcPort, { 'grpc.use_local_subchannel_pool': 1 });
  try {
    return await runRoundOn(srv, round, { url: cli.url, grpc });
  } finally {
    grpc.close();
  }
}

/** The round's malformed cases, for a failure's detail. */
const attacksOf = (round: Round) =>
  round.cases
    .filter((c) => c.kind === 'malformed')
    .map(caseLabel)
    .join(', ') || 'none';

async function runRoundOn(srv: BoundaryServer, round: Round, endpoints: Endpoints): Promise<RoundReport> {
  const { cli } = srv;
  const failures: Failure[] = [];
  const pidsBefore = await readyPids(cli);
  const valid = round.cases.filter((c): c is ValidCase => c.kind === 'valid');
  const attacks = attacksOf(round);

  const solo = await Promise.all(
    valid.map(async (c) => {
      // Solo answers come from bodies sent whole: the chunking under test is the round's.
      const o = await send({ ...validCall(c, kSolo), chunks: undefined } as Call, endpoints);
      try {
        const rows = answerRows(c, o);
        if (!sameRows(rows, knownAnswer(c)))
          failures.push({
            signature: `${caseLabel(c)}: the solo answer is not x + 1`,
            detail: `got ${JSON.stringify(rows).slice(0, 200)}`,
            case: c,
          });
        return rows;
      } catch (err) {
        failures.push({
          signature: `${caseLabel(c)}: no solo answer: ${describeOutcome(o)}`,
          detail: (err as Error).message.slice(0, 300),
          case: c,
        });
        return null;
      }
    }),
  );

  const monitor = new Monitor(cli.pid, pidsBefore);
  let outcomes: Outcome[];
  try {
    outcomes = await Promise.all(round.cases.map((c) => send(callOf(c, kBatched), endpoints)));
  } finally {
    monitor.stop();
  }

  let k = 0;
  round.cases.forEach((c, i) => {
    const o = outcomes[i];
    if (c.kind === 'malformed') {
      const problem = refusalProblem(o);
      if (problem)
        failures.push({
          signature: `${caseLabel(c)}: ${problem.what}`,
          detail: `${problem.detail}: ${o.body.toString('utf8').slice(0, 200)}`,
          case: c,
        });
      return;
    }
    const expected = solo[k++];
    // A body in too many small chunks gets the chunk-count refusal instead of its answer.
    const chunking = chunkVerdict(callOf(c, kBatched));
    if (chunking === 'refused' || (chunking === 'either' && isChunkRefusal(o))) {
      if (!isChunkRefusal(o))
        failures.push({
          signature: `canary in too many small chunks: ${describeOutcome(o)} instead of 400 MME_ERR_BODY_CHUNKS_TOO_SMALL`,
          detail: `${caseLabel(c)} beside [${attacks}]: ${o.body.toString('utf8').slice(0, 200)}`,
          case: c,
        });
      return;
    }
    let rows: number[][];
    try {
      rows = answerRows(c, o);
    } catch (err) {
      failures.push({
        signature: `canary: ${describeOutcome(o)}`,
        detail: `${caseLabel(c)} beside [${attacks}]: ${(err as Error).message.slice(0, 300)}`,
        case: c,
      });
      return;
    }
    if (expected && !sameRows(rows, expected)) {
      failures.push({
        signature: 'canary: the answer differs from its solo answer',
        detail: `${caseLabel(c)} beside [${attacks}]: got ${JSON.stringify(rows).slice(0, 160)}, alone ${JSON.stringify(expected).slice(0, 160)}`,
        case: c,
      });
    }
  });

  const pidsAfter = await readyPids(cli);
  if (pidsAfter.join() !== pidsBefore.join()) {
    failures.push({
      signature: `a ${srv.mode === 'shared' ? 'shared host' : 'worker'} process was replaced`,
      detail: `pids ${pidsBefore.join(',')} → ${pidsAfter.join(',')} in a round with [${attacks}]`,
    });
  }
  return {
    failures,
    operations: valid.length + round.cases.length,
    serverRss: { start: monitor.serverRssAtStart, peak: monitor.peakServer },
    workerRss: { start: monitor.workersRssAtStart, peak: monitor.peakWorkers },
  };
}

/**
 * A round's RSS growth past its bounds. `inFlight` rounds running at once share the server, so
 * the bounds are that many times the bound of one.
 */
export function roundRssFailures(srv: BoundaryServer, round: Round, report: RoundReport, inFlight = 1): Failure[] {
  const failures: Failure[] = [];
  const check = (what: string, span: RssSpan, bound: number) => {
    if (span.peak > span.start + inFlight * bound)
      failures.push({
        signature: `${what} RSS over its bound`,
        detail: `${MiB(span.start)} -> ${MiB(span.peak)} (bound: + ${MiB(inFlight * bound)}) in a round with [${attacksOf(round)}]`,
      });
  };
  check('server', report.serverRss, kServerRssGrowth);
  check(srv.mode === 'shared' ? 'host' : 'worker', report.workerRss, kWorkerRssGrowth);
  return failures;
}

export interface RetainedRss {
  /** RSS now, bytes: the server's, and its workers' (or host's) together. */
  server: number;
  workers: number;
  /** Each of them past its bound over the warm baseline. */
  problems: string[];
}

/** What the rounds left behind: RSS the server or its workers kept past the same bounds over their warm baseline. */
export async function retainedRss(srv: BoundaryServer, inFlight = 1): Promise<RetainedRss> {
  const server = rssBytes(srv.cli.pid);
  const workers = workerRss(await readyPids(srv.cli));
  const problems: string[] = [];
  const bound = { server: inFlight * kServerRssGrowth, workers: inFlight * kWorkerRssGrowth };
  if (server > srv.baseline.server + bound.server)
    problems.push(
      `the server kept ${MiB(server)} after the rounds, warm ${MiB(srv.baseline.server)} (bound: + ${MiB(bound.server)})`,
    );
  if (workers > srv.baseline.workers + bound.workers)
    problems.push(
      `the ${srv.mode === 'shared' ? 'host' : 'workers'} kept ${MiB(workers)} after the rounds, warm ${MiB(srv.baseline.workers)} (bound: + ${MiB(bound.workers)})`,
    );
  return { server, workers, problems };
}

/** A failing round as an assertion message: each failure with its case. */
export function formatFailures(failures: readonly Failure[]): string {
  return failures
    .map(
      (f) => `- ${f.signature}\n    ${f.detail}${f.case ? `\n    case: ${JSON.stringify(f.case).slice(0, 400)}` : ''}`,
    )
    .join('\n');
}

export interface FuzzOptions {
  mode: WorkerMode;
  /** Requests to send in all (solo answers included); the last rounds may go a few over. */
  operations: number;
  /** Round i is fc.sample(roundArb, { seed: seed + i }): any failing round can be replayed alone. */
  seed: number;
  /** Rounds in flight at once: their requests meet in the same batches too. */
  concurrency: number;
  progress?: (line: string) => void;
}

export interface FuzzFinding {
  first: Failure;
  /** Seed of the first round that showed it. */
  roundSeed: number;
  count: number;
}

export interface FuzzReport {
  mode: WorkerMode;
  operations: number;
  rounds: number;
  /** By signature: the distinct failures. */
  findings: Map<string, FuzzFinding>;
  serverRss: { start: number; end: number; peak: number };
  workerRss: { start: number; end: number; peak: number };
  seconds: number;
}

/** `npm run fuzz`'s boundary part: rounds against a fresh server until `operations` requests have gone out. */
export async function fuzzBoundary(opts: FuzzOptions): Promise<FuzzReport> {
  const t0 = Date.now();
  const srv = await startBoundaryServer(opts.mode);
  try {
    const findings = new Map<string, FuzzFinding>();
    const peaks = { server: 0, workers: 0 };
    let operations = 0;
    let rounds = 0;
    let reported = 0;
    const loop = async () => {
      while (operations < opts.operations) {
        const roundSeed = opts.seed + rounds++;
        const round = fc.sample(roundArb, { seed: roundSeed, numRuns: 1 })[0];
        const report = await runRound(srv, round);
        operations += report.operations;
        peaks.server = Math.max(peaks.server, report.serverRss.peak);
        peaks.workers = Math.max(peaks.workers, report.workerRss.peak);
        for (const f of [...report.failures, ...roundRssFailures(srv, round, report, opts.concurrency)]) {
          const seen = findings.get(f.signature);
          if (seen) seen.count++;
          else {
            findings.set(f.signature, { first: f, roundSeed, count: 1 });
            opts.progress?.(`new failure (round seed ${roundSeed}): ${f.signature}`);
          }
        }
        if (operations - reported >= 10_000) {
          reported = operations;
          opts.progress?.(
            `${operations}/${opts.operations} operations, ${findings.size} distinct failures, server RSS ${MiB(rssBytes(srv.cli.pid))}`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, loop));
    const retained = await retainedRss(srv, opts.concurrency);
    for (const detail of retained.problems) {
      const signature = `${detail.split(' kept ')[0]} kept more RSS than its bound after the rounds`;
      findings.set(signature, { first: { signature, detail }, roundSeed: opts.seed, count: 1 });
    }
    return {
      mode: opts.mode,
      operations,
      rounds,
      findings,
      serverRss: { start: srv.baseline.server, end: retained.server, peak: peaks.server },
      workerRss: { start: srv.baseline.workers, end: retained.workers, peak: peaks.workers },
      seconds: (Date.now() - t0) / 1000,
    };
  } finally {
    await srv.close();
  }
}
