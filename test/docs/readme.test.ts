import assert from 'node:assert/strict';
import fs from 'node:fs';
import { README, renderReadme } from '../../scripts/readme-tables';

describe('README', () => {
  it('has the current config-key and error-code tables (regenerate: node dist/scripts/readme-tables.js)', () => {
    const text = fs.readFileSync(README, 'utf8');
    assert.equal(text, renderReadme(text));
  });
});
