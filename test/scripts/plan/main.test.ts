import assert from 'node:assert/strict';
import path from 'node:path';
import { kRepoRoot } from '../../../harness/repo-root';
import { runNodeScript } from '../../../harness/run-node-script';

const kExample = path.join(kRepoRoot, 'scripts', 'plan', 'example-inventory.csv');

describe('npm run plan with model_repository', () => {
  it('adds the download to a cold first request and bounds the repository traffic per scenario', async () => {
    const run = await runNodeScript('plan/main', [
      '--inventory',
      kExample,
      '--instance-memory-gib',
      '8',
      '--instances',
      '2',
      '--requests',
      '5000',
      '--repository-mbps',
      '100',
      '--cold-start-ms',
      '150',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const m =
      /at 100 MB\/s and a 150 ms cold start from disk, a cold first request takes about (\d+) ms for the median model \(([\d.]+) MiB\)/.exec(
        run.stdout,
      );
    assert.ok(m, run.stdout);
    assert.equal(Number(m[1]), Math.round(150 + ((Number(m[2]) * 2 ** 20) / 1e6 / 100) * 1000));
    assert.match(run.stdout, /- dedicated, 2 instances \(hash\): at most \d+ MB\/min from the repository/);
  });

  it('refuses --cold-start-ms without the bandwidth it goes with', async () => {
    const run = await runNodeScript('plan/main', [
      '--inventory',
      kExample,
      '--instance-memory-gib',
      '8',
      '--instances',
      '2',
      '--cold-start-ms',
      '150',
    ]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /--cold-start-ms goes with --repository-mbps/);
  });
});
