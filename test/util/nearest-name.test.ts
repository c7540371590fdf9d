import assert from 'node:assert/strict';
import { nearestName } from '../../src/util/nearest-name';

describe('nearestName', () => {
  const known = ['model_name', 'url', 'initial_workers'] as const;
  it('names the known name a typo is closest to, ignoring case', () => {
    assert.equal(nearestName('initial_worker', known), 'initial_workers');
    assert.equal(nearestName('Model_Name', known), 'model_name');
    assert.equal(nearestName('uri', known), 'url');
  });
  it('names none when every known name is further than a third of the name (at least 2 edits)', () => {
    assert.equal(nearestName('pinnned', known), null);
    assert.equal(nearestName('anything', []), null);
  });
});
