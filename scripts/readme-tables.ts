/**
 * The README's reference tables are generated from the code that enforces them (config keys,
 * error codes), so they cannot drift: `node dist/scripts/readme-tables.js` rewrites them and
 * test/docs/readme.test.ts fails when they are stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { renderKeysMarkdown } from '../src/config/keys';
import { ERRORS } from '../src/errors';

export const README = path.join(__dirname, '..', '..', 'README.md');

export function renderErrorsMarkdown(): string {
  const rows = Object.entries(ERRORS).map(([code, e]) => `| ${e.status} | \`${code}\` | ${e.type} | ${e.when} |`);
  return ['| status | errorCode | type | when |', '|---|---|---|---|', ...rows].join('\n');
}

export const SECTIONS: Record<string, () => string> = {
  'config-keys': renderKeysMarkdown,
  'error-codes': renderErrorsMarkdown,
};

export function renderReadme(text: string): string {
  let out = text;
  for (const [name, render] of Object.entries(SECTIONS)) {
    const re = new RegExp(`(<!-- ${name}:start -->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`);
    if (!re.test(out)) throw new Error(`README.md has no <!-- ${name}:start --> … <!-- ${name}:end --> section`);
    out = out.replace(re, (_, a: string, b: string) => `${a}${render()}\n${b}`);
  }
  return out;
}

if (require.main === module) {
  fs.writeFileSync(README, renderReadme(fs.readFileSync(README, 'utf8')));
}
