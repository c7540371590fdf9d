/**
 * `npm run plan`: how many instances of what memory a multi-model endpoint needs, in numbers. SageMaker's
 * sizing advice is prose (pick instance memory so the frequently used models stay loaded; watch
 * ModelCacheHit and cold starts); this replays the workload through the cache simulator for both
 * worker modes, on one instance and on a fleet, and prints hit ratio, loads per minute, the share of
 * requests that wait for a cold load, and memory headroom.
 */
import fs from 'node:fs';
import { Flags, runCli, UsageError } from '../cli-flags';
import { ASSUMPTIONS, MiB, MODES, type WorkerMode } from './assumptions';
import { downloadLines, type DownloadOptions } from './download';
import { MAX_INSTANCES, predict, smallestFleet, type Prediction, type Routing } from './planner';
import { inventoryWorkload, parseInventory, traceWorkload, type Workload } from './workload';

export const USAGE = `Usage:
  npm run plan -- (--inventory FILE.csv | --trace FILE.csv) --instance-memory-gib G
                  (--instances N | --target-hit-ratio R) [--requests K] [--seed S]
  --inventory   CSV with the header model,size_mb,requests_per_minute (size of the .onnx file)
  --trace       CSV with the header time_ms,model,size_mb, one row per request, in time order
  --instance-memory-gib  memory of one instance (ml.m5.xlarge: 16, ml.c5.2xlarge: 16, ml.r5.xlarge: 32)
  --instances   predict one instance and fleets of N (hash-routed and round-robin)
  --target-hit-ratio  find the smallest hash-routed fleet reaching R (0..1), per worker mode
  --requests    length of the stream drawn from an inventory (default 100000); --seed its seed (1)
  --repository-mbps  with model_repository: MB/s from the store, to add each load's download time
  --cold-start-ms    the measured first-request latency of a cold model from disk (npm run bench:repository)`;

const FLAGS = {
  inventory: 'string',
  trace: 'string',
  'instance-memory-gib': 'string',
  instances: 'string',
  'target-hit-ratio': 'string',
  requests: 'string',
  seed: 'string',
  'repository-mbps': 'string',
  'cold-start-ms': 'string',
} as const;

export interface PlanOptions {
  instanceBytes: number;
  instances?: number;
  targetHitRatio?: number;
  download?: DownloadOptions;
}

const ROUTING_LABEL: Record<Routing, string> = {
  one: 'one instance',
  hash: 'consistent hash',
  'round-robin': 'round robin',
};
const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const mib = (bytes: number) =>
  `${Math.round(bytes / MiB)
    .toLocaleString('en-US')
    .replace(/,/g, ' ')} MiB`;

function row(p: Prediction): string {
  return `| ${p.mode.name} | ${ROUTING_LABEL[p.routing]} | ${p.instances} | ${pct(p.hitRatio)} | ${p.loadsPerMinute.toFixed(1)} | ${pct(p.waitingShare)} | ${mib(p.headroomBytes)} of ${mib(p.budgetBytes)} |`;
}

function predictions(workload: Workload, opts: PlanOptions): { rows: Prediction[]; notes: string[] } {
  if (opts.targetHitRatio === undefined) {
    const n = opts.instances ?? 1;
    const routings: Routing[] = n === 1 ? ['one'] : ['one', 'hash', 'round-robin'];
    return {
      rows: MODES.flatMap((mode) =>
        routings.map((routing) => predict(workload, opts.instanceBytes, { mode, routing, instances: n })),
      ),
      notes: [],
    };
  }
  const target = opts.targetHitRatio;
  const rows: Prediction[] = [];
  const notes: string[] = [];
  for (const mode of MODES) {
    const found = smallestFleet(workload, opts.instanceBytes, mode, target);
    if (found) {
      rows.push(found);
      notes.push(
        `${mode.name} workers: ${found.instances} instance${found.instances === 1 ? '' : 's'} reach ${pct(target)} with model-name hashing.`,
      );
    } else {
      rows.push(predict(workload, opts.instanceBytes, { mode, routing: 'hash', instances: MAX_INSTANCES }));
      notes.push(
        `${mode.name} workers: ${MAX_INSTANCES} instances do not reach ${pct(target)}; choose larger instances.`,
      );
    }
  }
  return { rows, notes };
}

function assumptionLines(): string[] {
  return [
    ...MODES.map((m: WorkerMode) => `- ${m.name}: ${m.basis}`),
    `- per instance, ${ASSUMPTIONS.reserveMiB} MiB are kept for the server (model_memory_reserve_mb); models are evicted by ${ASSUMPTIONS.policy}, the server's default`,
    '- figures are the steady state: the second half of the request stream, after the first half warmed the caches',
    '- consistent hash: each model on one instance, as ingress-nginx upstream-hash-by or nginx hash … consistent route it; SageMaker routes by TargetModel similarly',
  ];
}

/** The printed plan: the workload, the table, what it means, and the assumptions behind it. */
export function renderPlan(workload: Workload, opts: PlanOptions): string {
  const { rows, notes } = predictions(workload, opts);
  const total = workload.models.reduce((s, m) => s + m.weightsBytes, 0);
  return [
    `workload: ${workload.models.length} models, ${mib(total)} of .onnx files, ${workload.requests.length} requests over ${workload.minutes.toFixed(1)} min (${(workload.requests.length / workload.minutes).toFixed(0)}/min); instance memory ${(opts.instanceBytes / MiB / 1024).toFixed(1)} GiB`,
    '',
    '| workers | routing | instances | hit ratio | loads/min | requests waiting for a load | memory headroom (tightest instance) |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(row),
    ...(notes.length ? ['', ...notes] : []),
    ...(opts.download ? ['', ...downloadLines(workload, rows, opts.download)] : []),
    '',
    'Assumptions:',
    ...assumptionLines(),
  ].join('\n');
}

function readInput(flags: Flags): Workload {
  const inventory = flags.string('inventory');
  const trace = flags.string('trace');
  if ((inventory === undefined) === (trace === undefined))
    throw new UsageError('give exactly one of --inventory and --trace');
  const file = (inventory ?? trace)!;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code})`);
  }
  return inventory !== undefined
    ? inventoryWorkload(parseInventory(text, file), flags.int('requests', 100_000, 100), flags.int('seed', 1, 0))
    : traceWorkload(text, file);
}

async function main(argv: string[]): Promise<void> {
  const flags = Flags.parse(argv, FLAGS);
  if (flags.positionals.length > 0) throw new UsageError(`unexpected argument ${flags.positionals[0]}`);
  if (flags.has('instances') === flags.has('target-hit-ratio'))
    throw new UsageError('give exactly one of --instances and --target-hit-ratio');
  const gib = flags.number('instance-memory-gib', NaN, 0.5);
  if (Number.isNaN(gib)) throw new UsageError('--instance-memory-gib is required: the memory of one instance in GiB');
  const target = flags.has('target-hit-ratio') ? flags.number('target-hit-ratio', 0, 0) : undefined;
  if (target !== undefined && target >= 1) throw new UsageError('--target-hit-ratio is a fraction below 1, e.g. 0.95');
  if (flags.has('cold-start-ms') && !flags.has('repository-mbps'))
    throw new UsageError('--cold-start-ms goes with --repository-mbps, the bandwidth from model_repository');
  const download = flags.has('repository-mbps')
    ? { mbps: flags.number('repository-mbps', 0, 0.001), coldStartMs: flags.number('cold-start-ms', 0, 0) }
    : undefined;
  const opts: PlanOptions = {
    instanceBytes: gib * 1024 * MiB,
    instances: flags.has('instances') ? flags.int('instances', 1, 1) : undefined,
    targetHitRatio: target,
    download,
  };
  console.log(renderPlan(readInput(flags), opts));
}

if (require.main === module) runCli(USAGE, main);
