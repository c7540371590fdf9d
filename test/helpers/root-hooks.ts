import assert from 'node:assert/strict';
import { checkEveryCliServerLog } from '../../harness/cli-server';
import { waitFor, workerPidsOf } from '../../harness/process-probes';
import { type SkipPolicy, skipPolicy, skipReport } from './skip';
import { watchedProcesses } from '../../harness/watched-processes';
import { pinTensorArrayTypes } from '../../src/worker-process/warmup';

// Tests make onnxruntime tensors in this process too (fixtures, in-process baselines): pin float16 to
// Uint16Array before any of them, as each worker does, or Node 24's Float16Array breaks the binding.
pinTensorArrayTypes();

/**
 * Promise rejections nobody handled in this process: in-process servers, helpers, tests. Mocha's own
 * listener keeps them from ending the run, so without this they would pass unseen.
 */
const unhandled: string[] = [];
process.on('unhandledRejection', (reason) => {
  unhandled.push(reason instanceof Error ? (reason.stack ?? reason.message) : String(reason));
});

/** What servers started as processes of their own (harness/cli-server.ts) logged about one, theirs or their workers'. */
const spawnedReports: string[] = [];

checkEveryCliServerLog((lines) => {
  for (const line of lines) if (line.includes('unhandled promise rejection')) spawnedReports.push(line);
});

/** Worker exits on an unhandled rejection that a test caused on purpose. */
let expectedWorkerExits = 0;

/** A test is about to make a worker exit on an unhandled rejection: the suite's check allows for it. */
export function expectUnhandledRejectionExit(): void {
  expectedWorkerExits++;
}

/** Read before the first test, so that a typo in MME_STRICT or MME_ALLOW_SKIP stops the run at once. */
let policy: SkipPolicy | undefined;

/** The tests that did not run, printed once mocha's summary is out (mochaGlobalTeardown runs after it). */
let notRun: string | null = null;

export const mochaHooks = {
  beforeAll(): void {
    policy = skipPolicy();
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    // Whatever a test did, no worker process may outlive the suite.
    await waitFor(() => workerPidsOf(process.pid).length === 0, 'every worker process to exit', 10_000).catch(
      () => undefined,
    );
    assert.deepEqual(workerPidsOf(process.pid), [], 'worker processes left running after the test suite');
    assert.deepEqual(unhandled, [], 'promise rejections nobody handled in the test process');
    assert.deepEqual(
      spawnedReports,
      [],
      'promise rejections nobody handled in servers started as processes, or their workers',
    );
    let exits = 0;
    for (const r of watchedProcesses) exits += r.unhandledRejectionExits;
    assert.equal(
      exits,
      expectedWorkerExits,
      'worker processes that exited on a promise rejection nobody handled (the server log names the request)',
    );
    // A test that did not run is listed at the end; under MME_STRICT=1 it fails the run unless MME_ALLOW_SKIP names its id.
    const report = skipReport(this.test!.parent!, policy ?? skipPolicy());
    notRun = report.notRun;
    if (report.failure) assert.fail(report.failure);
  },
};

export function mochaGlobalTeardown(): void {
  if (notRun) console.log(`\n${notRun}\n`);
}
