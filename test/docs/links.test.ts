/**
 * Every relative link in the README and docs/ points at a file of the repository, and every
 * #anchor at a heading of its target (GitHub's slugs), so moving a section cannot leave a dead link.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DOCS, ROOT } from '../../scripts/docs-tables';

const kFiles = [
  path.join(ROOT, 'README.md'),
  ...fs
    .readdirSync(DOCS)
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(DOCS, f)),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1])));
}

describe('docs: links', () => {
  it('finds docs to check (none would make the tests below zero tests)', () => assert.ok(kFiles.length > 0, DOCS));
  for (const file of kFiles) {
    it(`${path.relative(ROOT, file)}: every relative link and anchor resolves`, () => {
      const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      const dead: string[] = [];
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [where, anchor] = target.split('#') as [string, string | undefined];
        const resolved = where === '' ? file : path.resolve(path.dirname(file), where);
        if (!fs.existsSync(resolved)) dead.push(`${target} (no ${path.relative(ROOT, resolved)})`);
        else if (anchor !== undefined && !anchorsOf(resolved).has(anchor)) dead.push(`${target} (no such heading)`);
      }
      assert.deepEqual(dead, []);
    });
  }

  it('the docs carry no internal notes (work-item numbers, unmet-target marks, stand-ins of one machine)', () => {
    for (const file of kFiles) {
      const text = fs.readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /\bpart[- ]\d+\b|❌|this machine's local/i, path.relative(ROOT, file));
    }
  });
});
