/**
 * Issue 21's property test: hostile input costs nothing and never reaches another caller's answer.
 *
 * fast-check generates rounds (harness/boundary/generators.ts): 1–4 malformed requests and
 * canaries (valid requests of known answer) for the rest of 8, over every codec and route
 * (SageMaker invoke, /invocations and /predictions with JSON in all four shapes, CSV and .npy; /v2
 * infer JSON and binary; KServe ModelInfer typed and raw; TorchServe Predictions), HTTP bodies
 * whole or in arbitrary chunk sizes (runs of tiny chunks included), and gRPC messages with a field
 * of a wire type no proto3 message has (groups 3 and 4, 6, 7) inserted anywhere. A round goes at
 * once to a model that batches (batch_size 8, max_batch_delay 500 ms), so the attacks share a
 * batch with the canaries, in a CLI server with dedicated workers (every body through their
 * shared-memory body rings) and in one with a shared host (bodies in its socket). scripts/hardening/boundary-fuzz.ts
 * checks every round: each canary gets exactly its solo answer; each malformed request a 4xx
 * (INVALID_ARGUMENT over gRPC) of at most 64 KiB; no worker or host is replaced; nothing answers
 * 5xx. What the rounds cost in memory is a measurement, not a test (and differs between Node
 * releases): scripts/hardening/boundary-memory.ts bounds it (docs/development.md, "Node").
 *
 * Each bug the property found is kept as a regression round (harness/boundary/regressions.ts).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  formatFailures,
  kBatched,
  runRound,
  startBoundaryServer,
  type BoundaryServer,
  type WorkerMode,
} from '../../scripts/hardening/boundary-fuzz';
import type { Round } from '../../harness/boundary/cases';
import { kRoundSize, roundArb } from '../../harness/boundary/generators';
import { kRegressions } from '../../harness/boundary/regressions';
import { request } from '../../harness/http-requests';

/** Generated rounds per worker mode: a round (one full batch, its solo answers first) takes ~0.15 s. */
const kRuns = Number(process.env.BOUNDARY_RUNS ?? 100);
// 0, a typo or a fraction would run nothing, or a property fast-check refuses, and still pass.
if (!Number.isInteger(kRuns) || kRuns < 1)
  throw new Error(
    `BOUNDARY_RUNS is "${String(process.env.BOUNDARY_RUNS).slice(0, 100)}"; set it to a whole number ≥ 1`,
  );
/**
 * The seed is always chosen here, never inside fast-check, so that a failure can be named before
 * shrinking ends: BOUNDARY_SEED (with BOUNDARY_PATH) replays a run, and a shrinking that outlasts
 * the test's timeout still leaves the first failing round's seed, path and cases on stderr.
 */
const kSeed =
  process.env.BOUNDARY_SEED === undefined
    ? (Date.now() ^ (Math.random() * 2 ** 31)) | 0
    : Number(process.env.BOUNDARY_SEED);
const kPath = process.env.BOUNDARY_PATH;
/**
 * Every round runs, however slow the machine (fast-check is not interrupted, so a loaded machine
 * takes longer rather than quietly running fewer rounds): the timeout allows 3 s a round.
 */
const kTimeLimitMs = kRuns * 3_000;

const row = (start: number) => Array.from({ length: 16 }, (_, j) => start + j);

async function assertRound(srv: BoundaryServer, round: Round): Promise<void> {
  const report = await runRound(srv, round);
  if (report.failures.length)
    assert.fail(`${report.failures.length} invariant(s) broken:\n${formatFailures(report.failures)}`);
}

/** Mean batch size of the batching model, from its Prometheus histogram. */
async function meanBatchSize(srv: BoundaryServer): Promise<number> {
  const text = (await request(`${srv.cli.managementUrl}/metrics`)).text;
  const value = (suffix: string) =>
    Number(
      new RegExp(`^mme_batch_size_${suffix}\\{[^}]*model="${kBatched}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN,
    );
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
      it(`regression: ${r.name} (was: ${r.was}; ${r.found})`, () => assertRound(srv, r.round));
    }

    it(`${kRuns} generated rounds: canaries get their solo answers, malformed requests a small 4xx, no process replaced`, async () => {
      // The rounds before the first failure run one at a time, so the calls so far are its path.
      let calls = 0;
      let reported = false;
      await fc.assert(
        fc.asyncProperty(roundArb, async (round) => {
          calls++;
          try {
            await assertRound(srv, round);
          } catch (err) {
            if (!reported && kPath === undefined) {
              reported = true;
              process.stderr.write(
                `boundary property (${mode}): first failure at seed ${kSeed}, path "${calls - 1}" (replay: BOUNDARY_SEED=${kSeed} BOUNDARY_PATH=${calls - 1} BOUNDARY_RUNS=1); shrinking\n  round: ${JSON.stringify(round).slice(0, 4000)}\n  ${(err as Error).message.slice(0, 2000)}\n`,
              );
            }
            throw err;
          }
        }),
        {
          numRuns: kRuns,
          seed: kSeed,
          ...(kPath === undefined ? {} : { path: kPath }),
          // The message names the seed, the path and the shrunk round (fc.defaultReportMessage).
          verbose: fc.VerbosityLevel.Verbose,
        },
      );
    });

    it("the rounds ran in shared batches (the batching model's mean batch size is above 1)", async () => {
      await assertRound(srv, {
        cases: Array.from({ length: kRoundSize }, (_, i) => ({
          kind: 'valid',
          via: 'http',
          route: 'invoke',
          codec: 'bare',
          npy: '<f4',
          accept: 'none',
          contentType: 'exact',
          rows: [row(i)],
        })),
      });
      const mean = await meanBatchSize(srv);
      assert.ok(mean > 1, `mean batch size ${mean}`);
    });
  });
}
