/**
 * The boundary's memory bounds (issue 21), kept out of the test suite (issue 46): how much memory
 * hostile rounds cost is a measurement, and Node releases differ in it (docs/development.md,
 * "Node"). For each worker mode, a fresh boundary server (./boundary-fuzz.ts) runs every
 * regression round of the property test, then `rounds` generated rounds, then kPairRounds rounds
 * of two 6 MB CSV bodies; each round must keep its answers and stay within roundRssFailures'
 * growth bounds, and what the server and its workers keep afterwards must stay within
 * retainedRss' bounds over their warm baseline. `npm run soak` runs it with the other long
 * cases; alone: `node dist/scripts/hardening/boundary-memory.js [--rounds N] [--seed S]`.
 */
import fc from 'fast-check';
import type { Round } from '../../harness/boundary/cases';
import { roundArb } from '../../harness/boundary/generators';
import { kCsvPairRound, kRegressions } from '../../harness/boundary/regressions';
import { Flags, runCli, UsageError } from '../cli-flags';
import { retainedRss, roundRssFailures, runRound, startBoundaryServer, type WorkerMode } from './boundary-fuzz';
import { CaseReport } from './report';

/**
 * Rounds of the two-CSV round that would keep 25 × 12 MB if each body stayed: past the server's
 * bound over its warm baseline (was: both bodies kept every round, +11.5 MiB a round up to
 * ~2.2 GiB; found by npm run fuzz, seed 20241201).
 */
const kPairRounds = 25;

interface BoundaryMemoryOptions {
  mode: WorkerMode;
  /** Generated rounds: fc.sample(roundArb, { seed, numRuns: rounds }). */
  rounds: number;
  seed: number;
}

interface BoundaryMemoryResult {
  problems: string[];
  summary: string;
}

async function runBoundaryMemory(opts: BoundaryMemoryOptions): Promise<BoundaryMemoryResult> {
  const srv = await startBoundaryServer(opts.mode);
  try {
    const problems: string[] = [];
    const run = async (what: string, round: Round) => {
      const report = await runRound(srv, round);
      for (const f of [...report.failures, ...roundRssFailures(srv, round, report)])
        problems.push(`${what}: ${f.signature} (${f.detail})`);
    };
    for (const r of kRegressions) await run(`regression "${r.name}"`, r.round);
    const generated = fc.sample(roundArb, { seed: opts.seed, numRuns: opts.rounds });
    for (const [i, round] of generated.entries()) await run(`generated round ${i} of seed ${opts.seed}`, round);
    for (let i = 0; i < kPairRounds; i++) await run(`two 6 MB CSV bodies, round ${i + 1}`, kCsvPairRound);
    const retained = await retainedRss(srv);
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;
    return {
      problems: [...problems, ...retained.problems],
      summary:
        `${kRegressions.length + opts.rounds + kPairRounds} rounds on Node ${process.versions.node}; ` +
        `RSS warm -> after: server ${mib(srv.baseline.server)} -> ${mib(retained.server)}, ` +
        `${opts.mode === 'shared' ? 'host' : 'workers'} ${mib(srv.baseline.workers)} -> ${mib(retained.workers)}`,
    };
  } finally {
    await srv.close();
  }
}

/** Both worker modes, one case each. */
export async function reportBoundaryMemory(report: CaseReport, rounds: number, seed: number): Promise<void> {
  for (const mode of ['dedicated', 'shared'] as const) {
    const r = await runBoundaryMemory({ mode, rounds, seed });
    report.add(`boundary memory, worker_mode=${mode}, ${rounds} generated rounds`, r.problems, r.summary);
  }
}

const kUsage = `Usage: node dist/scripts/hardening/boundary-memory.js [options]

The boundary property's rounds (every regression round, generated rounds, 25 rounds of two 6 MB CSV
bodies) against a fresh CLI server in each worker mode, under the RSS bounds: each round's growth,
and what the server and its workers keep over their warm baseline afterwards. Fails on any excess.

Options:
  --rounds N   generated rounds per mode (default 100, as the property test)
  --seed S     their seed (default: time-based)
  --help       this text`;

if (require.main === module) {
  runCli(kUsage, async (argv) => {
    const flags = Flags.parse(argv, { rounds: 'string', seed: 'string' });
    if (flags.positionals.length) throw new UsageError(`unexpected argument ${flags.positionals[0]}`);
    const rounds = flags.int('rounds', 100, 0);
    const seed = flags.int('seed', Date.now() % 2 ** 31, 0);
    await CaseReport.run(kUsage, (report) => reportBoundaryMemory(report, rounds, seed));
  });
}
