import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, SECTIONS, renderDoc } from '../../scripts/docs-tables';

describe('docs: generated tables', () => {
  it('has generated sections to check (none would make the tests below zero tests)', () =>
    assert.ok(SECTIONS.length > 0));
  for (const file of new Set(SECTIONS.map((s) => s.file))) {
    it(`${path.relative(ROOT, file)} has the current generated tables (regenerate: node dist/scripts/docs-tables.js)`, () => {
      const text = fs.readFileSync(file, 'utf8');
      assert.equal(text, renderDoc(file, text));
    });
  }
});
