/**
 * The reference tables in docs/ are generated from the code that enforces them (config keys, error
 * codes, the planner's assumptions and example plans) or from the committed bench runs
 * (bench-results/latest.json: docs/performance.md's figures and the README's summary;
 * bench-results/part22-fleet and part22-autoscale: docs/deploy.md's fleet tables and docs/workers.md's
 * autoscaling figures; latest.json again: workers.md's figures of the two worker modes), so they cannot drift: `node dist/scripts/docs-tables.js` rewrites them and test/docs/tables.test.ts fails when they
 * are stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { renderKeysMarkdown } from '../src/config/keys';
import { ERRORS } from '../src/errors';
import { printedHelp } from './cli-flags';
import { renderFrameWait, renderWithoutBusyShare } from './bench/report/autoscale-figures';
import { FLEET_RUNS, renderFleetHotRun, renderFleetRun, renderFleetTargets } from './bench/report/fleet-figures';
import * as modes from './bench/report/modes-figures';
import { renderPerformanceSection, renderReadmeSummary } from './bench/report/report';
import { readRun } from './bench/report/results';
import { renderPlan } from './plan/main';
import { MiB } from './plan/assumptions';
import { renderAssumptionsMarkdown } from './plan/assumptions';
import { inventoryWorkload, parseInventory } from './plan/workload';

// Compiled to dist/scripts/, so the repository root is two levels up.
export const ROOT = path.join(__dirname, '..', '..');
export const DOCS = path.join(ROOT, 'docs');
const kFleetReadme = path.join(ROOT, 'bench-results', 'part22-fleet', 'README.md');

export function renderErrorsMarkdown(): string {
  const rows = Object.entries(ERRORS).map(([code, e]) => `| ${e.status} | \`${code}\` | ${e.type} | ${e.when} |`);
  return ['| status | errorCode | type | when |', '|---|---|---|---|', ...rows].join('\n');
}

/** docs/deploy.md's example plans: the command as shown, and what the planner prints for it. */
function renderPlanExample(args: { instances: number } | { targetHitRatio: number }): () => string {
  return () => {
    const inventory = 'scripts/plan/example-inventory.csv';
    const flag = 'instances' in args ? `--instances ${args.instances}` : `--target-hit-ratio ${args.targetHitRatio}`;
    const workload = inventoryWorkload(
      parseInventory(fs.readFileSync(path.join(ROOT, inventory), 'utf8'), inventory),
      100_000,
      1,
    );
    return [
      '```',
      `$ npm run -s plan -- --inventory ${inventory} --instance-memory-gib 8 ${flag}`,
      renderPlan(workload, { instanceBytes: 8 * 1024 * MiB, ...args }),
      '```',
    ].join('\n');
  };
}

/** A generated section: the docs file holding it, what renders it, and whether it sits inside a sentence. */
interface Section {
  name: string;
  file: string;
  render: () => string;
  /** A phrase between its markers on one line, rather than lines of its own. */
  inline?: true;
}

export const SECTIONS: readonly Section[] = [
  { name: 'config-keys', file: path.join(DOCS, 'configuration.md'), render: renderKeysMarkdown },
  { name: 'error-codes', file: path.join(DOCS, 'api.md'), render: renderErrorsMarkdown },
  { name: 'plan-assumptions', file: path.join(DOCS, 'deploy.md'), render: renderAssumptionsMarkdown },
  { name: 'plan-example-fleet', file: path.join(DOCS, 'deploy.md'), render: renderPlanExample({ instances: 3 }) },
  {
    name: 'plan-example-target',
    file: path.join(DOCS, 'deploy.md'),
    render: renderPlanExample({ targetHitRatio: 0.99 }),
  },
  { name: 'bench-figures', file: path.join(DOCS, 'performance.md'), render: () => renderPerformanceSection(readRun()) },
  { name: 'bench-summary', file: path.join(ROOT, 'README.md'), render: () => renderReadmeSummary(readRun()) },
  { name: 'fleet-targets', file: path.join(DOCS, 'deploy.md'), render: () => renderFleetTargets() },
  { name: 'fleet-hot-run', file: path.join(DOCS, 'deploy.md'), render: renderFleetHotRun },
  ...Object.entries(FLEET_RUNS).flatMap(([commit, runs]) => [
    { name: `fleet-targets-${commit}`, file: kFleetReadme, render: () => renderFleetTargets(runs) },
    ...runs.map((run) => ({ name: `fleet-run-${run}`, file: kFleetReadme, render: () => renderFleetRun(run) })),
  ]),
  ...Object.entries({
    'modes-dedicated-cost': modes.renderDedicatedCost,
    'modes-shared-cost': modes.renderSharedCost,
    'modes-pss-note': modes.renderPssNote,
    'modes-pss': modes.renderPssRow,
    'modes-cold': modes.renderColdRow,
    'modes-throughput': modes.renderThroughputRow,
    'modes-zipf': modes.renderZipfRow,
    'modes-spare-drop': modes.renderSpareDrop,
    'modes-noisy-neighbour': modes.renderNoisyNeighbour,
  }).map(([name, render]) => ({
    name,
    file: path.join(DOCS, 'workers.md'),
    render: () => render(readRun()),
    inline: true as const,
  })),
  { name: 'autoscale-frame-wait', file: path.join(DOCS, 'workers.md'), render: renderFrameWait, inline: true },
  {
    name: 'autoscale-without-busy-share',
    file: path.join(DOCS, 'workers.md'),
    render: renderWithoutBusyShare,
    inline: true,
  },
];

/** `text` (the contents of `file`) with every section that lives in that file regenerated. */
export function renderDoc(file: string, text: string): string {
  let out = text;
  for (const { name, render, inline } of SECTIONS.filter((s) => s.file === file)) {
    const eol = inline ? '' : '\\n';
    const re = new RegExp(`(<!-- ${name}:start -->${eol})[\\s\\S]*?(<!-- ${name}:end -->)`);
    if (!re.test(out))
      throw new Error(`${path.relative(ROOT, file)} has no <!-- ${name}:start --> … <!-- ${name}:end --> section`);
    out = out.replace(re, (_, a: string, b: string) => `${a}${render()}${inline ? '' : '\n'}${b}`);
  }
  return out;
}

const USAGE = `Usage: node dist/scripts/docs-tables.js
  Rewrites the generated sections of docs/ and the README (config keys, error codes, planner assumptions and
  example plans, the bench figures, the fleet and autoscaling figures) from the code that enforces them and from
  bench-results/ (latest.json, part22-fleet/, part22-autoscale/).`;

if (require.main === module && !printedHelp(USAGE)) {
  for (const file of new Set(SECTIONS.map((s) => s.file)))
    fs.writeFileSync(file, renderDoc(file, fs.readFileSync(file, 'utf8')));
}
