/**
 * What eviction classes cost: the zipf trace replayed with its least requested models marked
 * eviction_priority=high (a tail that must stay warm, such as a paid tier called rarely), against
 * the same trace with every model normal, through LRU and GDSF. `npm run cache-sim` prints the
 * docs/cache.md section; `node dist/scripts/cache-sim/classes.js` prints the raw figures as JSON
 * (bench-results/part31-classes/).
 */
import { ClassedPolicy, type PolicyName } from '../../src/server/cache/eviction-classes';
import { printedHelp } from '../cli-flags';
import { CAPACITY, SEED } from './budget';
import { simulate, type SimResult } from './simulate';
import { zipfTrace, type Trace } from './traces';

/** Models in the high-priority tail: the least requested ones, about a third of the 2 GiB budget. */
export const TAIL_MODELS = 20;

export interface ClassRow {
  readonly policy: string;
  /** Whether the tail was marked high. */
  readonly classes: boolean;
  readonly result: SimResult;
  /** The tail's own requests and hits. */
  readonly tailRequests: number;
  readonly tailHits: number;
}

/** The zipf trace with its TAIL_MODELS least requested models marked high, and their names. */
export function tailTrace(seed: number): { trace: Trace; tail: ReadonlySet<string> } {
  const base = zipfTrace({ seed });
  const requests = new Map<number, number>(base.models.map((_, i) => [i, 0]));
  for (const r of base.requests) requests.set(r.model, requests.get(r.model)! + 1);
  const tailIndexes = [...requests].sort((a, b) => a[1] - b[1] || a[0] - b[0]).slice(0, TAIL_MODELS);
  const tail = new Set(tailIndexes.map(([i]) => base.models[i].name));
  const models = base.models.map((m) =>
    tail.has(m.name) ? { ...m, standing: { pinned: false, evictionPriority: 'high' as const } } : m,
  );
  return { trace: { ...base, name: 'zipf, high-priority tail', models }, tail };
}

export function runClasses(seed = SEED): ClassRow[] {
  const { trace, tail } = tailTrace(seed);
  const plain: Trace = { ...trace, models: trace.models.map(({ standing: _, ...m }) => m) };
  return (['lru', 'gdsf'] as PolicyName[]).flatMap((name) =>
    [false, true].map((classes) => {
      let tailRequests = 0;
      let tailHits = 0;
      const result = simulate(
        classes ? trace : plain,
        () => new ClassedPolicy(name),
        CAPACITY,
        (request, hit) => {
          if (!tail.has(trace.models[request.model].name)) return;
          tailRequests++;
          if (hit) tailHits++;
        },
      );
      return { policy: name.toUpperCase(), classes, result, tailRequests, tailHits };
    }),
  );
}

const percent = (x: number) => `${(x * 100).toFixed(1)} %`;

export function renderClassesTable(rows: readonly ClassRow[]): string {
  const lines = rows.map((r) => {
    const rest = (r.result.hits - r.tailHits) / (r.result.requests - r.tailRequests);
    return `| ${r.policy} | ${r.classes ? `tail high` : 'all normal'} | ${percent(r.result.hits / r.result.requests)} | ${percent(r.tailHits / r.tailRequests)} | ${percent(rest)} | ${Math.round(r.result.loadMicros / 60e6)} |`;
  });
  return [
    '| policy | classes | hit ratio | tail hit ratio | rest hit ratio | load time (min) |',
    '|---|---|---|---|---|---|',
    ...lines,
  ].join('\n');
}

/** The docs/cache.md section (between the cache-sim-classes markers). */
export function renderClassesMarkdown(rows: readonly ClassRow[] = runClasses()): string {
  const [lruPlain, lruHigh, gdsfPlain, gdsfHigh] = rows;
  const ratio = (r: ClassRow) => r.result.hits / r.result.requests;
  const cost = (plain: ClassRow, high: ClassRow) => ((ratio(plain) - ratio(high)) * 100).toFixed(1);
  return `### Model cache: what eviction classes cost

The zipf trace above, with its ${TAIL_MODELS} least requested models at \`eviction_priority=high\` (a tail that must
stay warm: a paid tier called rarely) and every other model \`normal\`, against the same trace with every model
normal (${CAPACITY.bytes / 1024 ** 3} GiB, seed ${SEED}). The tail then hits ${percent(gdsfHigh.tailHits / gdsfHigh.tailRequests)} of the time instead of
${percent(gdsfPlain.tailHits / gdsfPlain.tailRequests)} (GDSF); the rest pays with the room the tail holds: ${cost(gdsfPlain, gdsfHigh)} points of overall hit
ratio under GDSF, ${cost(lruPlain, lruHigh)} under LRU. A pinned model costs the same room and is never evicted at all.

${renderClassesTable(rows)}`;
}

const USAGE = `Usage: node dist/scripts/cache-sim/classes.js
  Replays the zipf trace with its ${TAIL_MODELS} least requested models at eviction_priority=high, and with every
  model normal, through LRU and GDSF; prints the raw figures as JSON.`;

if (require.main === module && !printedHelp(USAGE)) console.log(JSON.stringify(runClasses(), null, 2));
