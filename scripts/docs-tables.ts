/**
 * The reference tables in docs/ are generated from the code that enforces them (config keys, error
 * codes, the planner's assumptions and example plans) or from the committed bench run
 * (bench-results/latest.json: docs/performance.md's figures and the README's summary), so they cannot
 * drift: `node dist/scripts/docs-tables.js` rewrites them and test/docs/tables.test.ts fails when they
 * are stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { renderKeysMarkdown } from '../src/config/keys';
import { ERRORS } from '../src/errors';
import { printedHelp } from './cli-flags';
import { renderPerformanceSection, renderReadmeSummary } from './bench/report/report';
import { readRun } from './bench/report/results';
import { renderPlan } from './plan/main';
import { MiB } from './plan/assumptions';
import { renderAssumptionsMarkdown } from './plan/assumptions';
import { inventoryWorkload, parseInventory } from './plan/workload';

// Compiled to dist/scripts/, so the repository root is two levels up.
export const ROOT = path.join(__dirname, '..', '..');
export const DOCS = path.join(ROOT, 'docs');

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

/** Each generated section: the docs file holding it and what renders it. */
export const SECTIONS: ReadonlyArray<{ name: string; file: string; render: () => string }> = [
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
];

/** `text` (the contents of `file`) with every section that lives in that file regenerated. */
export function renderDoc(file: string, text: string): string {
  let out = text;
  for (const { name, render } of SECTIONS.filter((s) => s.file === file)) {
    const re = new RegExp(`(<!-- ${name}:start -->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`);
    if (!re.test(out))
      throw new Error(`${path.relative(ROOT, file)} has no <!-- ${name}:start --> … <!-- ${name}:end --> section`);
    out = out.replace(re, (_, a: string, b: string) => `${a}${render()}\n${b}`);
  }
  return out;
}

const USAGE = `Usage: node dist/scripts/docs-tables.js
  Rewrites the generated sections of docs/ and the README (config keys, error codes, planner assumptions and
  example plans, the bench figures) from the code that enforces them and from bench-results/latest.json.`;

if (require.main === module && !printedHelp(USAGE)) {
  for (const file of new Set(SECTIONS.map((s) => s.file)))
    fs.writeFileSync(file, renderDoc(file, fs.readFileSync(file, 'utf8')));
}
