/**
 * Issue 21's property test: hostile input costs nothing and never reaches another caller's answer.
 *
 * fast-check generates rounds (test/helpers/boundary-requests.ts): 1–4 malformed requests and
 * canaries (valid requests of known answer) for the rest of 8, over every codec and route
 * (SageMaker invoke, /invocations and /predictions with JSON in all four shapes, CSV and .npy; /v2
 * infer JSON and binary; KServe ModelInfer typed and raw; TorchServe Predictions). A round goes at
 * once to a model that batches (batch_size 8, max_batch_delay 500 ms), so the attacks share a
 * batch with the canaries, in a CLI server with dedicated workers and in one with a shared host. scripts/hardening/boundary-fuzz.ts
 * checks every round: each canary gets exactly its solo answer; each malformed request a 4xx
 * (INVALID_ARGUMENT over gRPC) of at most 64 KiB; no worker or host is replaced; the server's RSS
 * grows by at most 200 MiB within a round (the workers' by 256 MiB), and keeps no more than that
 * over its warm baseline once the rounds are done; nothing answers 5xx.
 *
 * Each bug the property found is kept below as a regression round: the seed that found it and the
 * counterexample fast-check shrank it to (against main at 4c7446b).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatFailures, kBatched, retainedRssProblems, runRound, startBoundaryServer, type BoundaryServer, type WorkerMode } from '../../scripts/hardening/boundary-fuzz';
import { kRoundSize, roundArb, type Round } from '../helpers/boundary-requests';
import { request } from '../helpers/server';

/** Generated rounds per worker mode: a round (one full batch, its solo answers first) takes ~0.15 s. */
const kRuns = Number(process.env.BOUNDARY_RUNS ?? 100);
const kSeed = process.env.BOUNDARY_SEED === undefined ? undefined : Number(process.env.BOUNDARY_SEED);
/**
 * Past this, fast-check stops generating (and shrinking) and reports what it has: a slow machine
 * runs fewer rounds and never fails for it, and a failure is reported partly shrunk.
 */
const kTimeLimitMs = 60_000;

const row = (start: number) => Array.from({ length: 16 }, (_, j) => start + j);

interface Regression {
  name: string;
  seed: number;
  round: Round;
}

const kRegressions: Regression[] = [];

async function assertRound(srv: BoundaryServer, round: Round): Promise<void> {
  const report = await runRound(srv, round);
  if (report.failures.length) assert.fail(`${report.failures.length} invariant(s) broken:\n${formatFailures(report.failures)}`);
}

/** Mean batch size of the batching model, from its Prometheus histogram. */
async function meanBatchSize(srv: BoundaryServer): Promise<number> {
  const text = (await request(`${srv.cli.managementUrl}/metrics`)).text;
  const value = (suffix: string) => Number(new RegExp(`^mme_batch_size_${suffix}\\{[^}]*model="${kBatched}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return value('sum') / value('count');
}

for (const mode of ['dedicated', 'shared'] as WorkerMode[]) {
  describe(`boundary property, worker_mode=${mode}: canaries beside malformed requests in shared batches`, function () {
    this.timeout(kTimeLimitMs + 120_000);
    let srv: BoundaryServer;
    before(async () => {
      srv = await startBoundaryServer(mode);
    });
    after(async () => {
      await srv?.close();
    });

    for (const r of kRegressions) {
      it(`regression (seed ${r.seed}): ${r.name}`, () => assertRound(srv, r.round));
    }

    it(`${kRuns} generated rounds: canaries get their solo answers, malformed requests a small 4xx, no process replaced, RSS bounded`, async () => {
      await fc.assert(fc.asyncProperty(roundArb, (round) => assertRound(srv, round)), {
        numRuns: kRuns, interruptAfterTimeLimit: kTimeLimitMs, ...(kSeed === undefined ? {} : { seed: kSeed }),
      });
    });

    it('the rounds ran in shared batches (the batching model\'s mean batch size is above 1)', async () => {
      await assertRound(srv, { cases: Array.from({ length: kRoundSize }, (_, i) => ({ kind: 'valid', via: 'http', route: 'invoke', codec: 'bare', npy: '<f4', accept: 'none', contentType: 'exact', rows: [row(i)] })) });
      const mean = await meanBatchSize(srv);
      assert.ok(mean > 1, `mean batch size ${mean}`);
    });

    it('after the rounds, the server and its workers hold no more than the RSS bounds over their warm baseline', async () => {
      assert.deepEqual(await retainedRssProblems(srv), []);
    });
  });
}
