import assert from 'node:assert/strict';
import { waitFor, workerPidsOf } from './processes';

/** Whatever a test did, no worker process may outlive the suite. */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    await waitFor(() => workerPidsOf(process.pid).length === 0, 'every worker process to exit', 10_000).catch(() => undefined);
    assert.deepEqual(workerPidsOf(process.pid), [], 'worker processes left running after the test suite');
  },
};
