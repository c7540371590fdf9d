/**
 * A suite for test/helpers/skip.test.ts to run in a mocha process of its own: one test that runs, one
 * that skips with an id, a suite skipped from its before-all hook, and what SKIP_GATE_CASE adds. Not a
 * *.test.ts, so `npm test` does not run it itself.
 */
import { type SkipId, skipBecause } from './skip';

describe('skip gate suite', () => {
  it('runs', () => {});

  it('needs nginx', function () {
    skipBecause(this, 'nginx', 'no nginx on this pretend machine');
  });

  describe('needs podman', function () {
    before(function () {
      skipBecause(this, 'podman', 'no podman on this pretend machine');
    });
    it('builds the image', () => {});
    it('runs the image', () => {});
  });

  if (process.env.SKIP_GATE_CASE === 'bare') it.skip('skips with no reason', () => {});
  if (process.env.SKIP_GATE_CASE === 'unknown-id')
    it('skips with an id skip.ts does not know', function () {
      skipBecause(this, 'ngnix' as SkipId, 'a typo');
    });
});
