/**
 * The reference tables in docs/ are generated from the code that enforces them (config keys, error
 * codes, the planner's assumptions), so they cannot drift: `node dist/scripts/docs-tables.js` rewrites them and
 * test/docs/tables.test.ts fails when they are stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { renderKeysMarkdown } from '../src/config/keys';
import { ERRORS } from '../src/errors';
import { printedHelp } from './cli-flags';
import { renderAssumptionsMarkdown } from './plan/assumptions';

// Compiled to dist/scripts/, so the repository root is two levels up.
export const ROOT = path.join(__dirname, '..', '..');
export const DOCS = path.join(ROOT, 'docs');

export function renderErrorsMarkdown(): string {
  const rows = Object.entries(ERRORS).map(([code, e]) => `| ${e.status} | \`${code}\` | ${e.type} | ${e.when} |`);
  return ['| status | errorCode | type | when |', '|---|---|---|---|', ...rows].join('\n');
}

/** Each generated section: the docs file holding it and what renders it. */
export const SECTIONS: ReadonlyArray<{ name: string; file: string; render: () => string }> = [
  { name: 'config-keys', file: path.join(DOCS, 'configuration.md'), render: renderKeysMarkdown },
  { name: 'error-codes', file: path.join(DOCS, 'api.md'), render: renderErrorsMarkdown },
  { name: 'plan-assumptions', file: path.join(DOCS, 'deploy.md'), render: renderAssumptionsMarkdown },
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
  Rewrites the generated tables of docs/ (config keys, error codes, planner assumptions) from the code that enforces them.`;

if (require.main === module && !printedHelp(USAGE)) {
  for (const file of new Set(SECTIONS.map((s) => s.file)))
    fs.writeFileSync(file, renderDoc(file, fs.readFileSync(file, 'utf8')));
}
