import assert from 'node:assert/strict';
import { essence, negotiate } from '../../src/worker-process/media-types';

const offered = ['application/json', 'text/csv', 'application/x-npy'];

describe('media type negotiation', () => {
  it('compares Content-Types without parameters or case', () => {
    assert.equal(essence('Text/CSV; charset=utf-8'), 'text/csv');
  });

  it('picks the offer with the highest q, specific ranges outranking wildcards', () => {
    assert.equal(negotiate('application/x-npy', offered), 'application/x-npy');
    assert.equal(negotiate('text/csv;q=0.5, application/x-npy', offered), 'application/x-npy');
    assert.equal(negotiate('text/*', offered), 'text/csv');
    assert.equal(negotiate('*/*', offered), 'application/json');
    assert.equal(negotiate('application/json;q=0, */*;q=0.1', offered), 'text/csv');
    assert.equal(negotiate('', offered), 'application/json');
  });

  it('returns null when nothing offered is acceptable', () => {
    assert.equal(negotiate('image/png', offered), null);
    assert.equal(negotiate('text/csv;q=0', offered), null);
  });
});
