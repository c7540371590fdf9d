import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { HashRing } from '../../../scripts/plan/hash-ring';
import { DEDICATED, MiB, SHARED, type WorkerMode } from '../../../scripts/plan/assumptions';
import { modelBudget, predict, smallestFleet } from '../../../scripts/plan/planner';
import { inventoryWorkload, parseInventory, traceWorkload, type Workload } from '../../../scripts/plan/workload';
import { assertValuesClose } from '../../helpers/assert-close';
import { runNodeScript } from '../../../harness/run-node-script';
import { tempDir } from '../../../harness/test-server';

const kRoot = path.join(__dirname, '..', '..', '..', '..');
const kExample = path.join(kRoot, 'scripts', 'plan', 'example-inventory.csv');
const GiB = 1024 * MiB;

/** n models of `sizeMiB` each, requested round and round: every model equally hot. */
function uniform(n: number, sizeMiB: number, requests = 2000): Workload {
  const rows = Array.from({ length: n }, (_, i) => `m${i},${sizeMiB},60`);
  return inventoryWorkload(
    parseInventory(['model,size_mb,requests_per_minute', ...rows].join('\n'), 'inv.csv'),
    requests,
    1,
  );
}

describe('sizing planner: inputs', () => {
  it('reads an inventory with its columns in any order, skipping comments and blank lines', () => {
    const rows = parseInventory('# a comment\nrequests_per_minute, model ,size_mb\n\n10,a,1.5\n0,b,3\n', 'x.csv');
    assert.deepEqual(rows, [
      { name: 'a', sizeMiB: 1.5, perMinute: 10 },
      { name: 'b', sizeMiB: 3, perMinute: 0 },
    ]);
  });

  it('says which line of an inventory is wrong and how to fix it', () => {
    assert.throws(
      () => parseInventory('model,size\na,1', 'x.csv'),
      /x\.csv: the first line must be a header with the columns model,size_mb,requests_per_minute \(missing size_mb, requests_per_minute\)/,
    );
    assert.throws(
      () => parseInventory('model,size_mb,requests_per_minute\na,1,2\na,1,3', 'x.csv'),
      /x\.csv:3: model a is listed twice; merge its rows/,
    );
    assert.throws(
      () => parseInventory('model,size_mb,requests_per_minute\na,big,2', 'x.csv'),
      /x\.csv:2: size_mb must be a positive number, got "big"/,
    );
    assert.throws(() => parseInventory('model,size_mb,requests_per_minute\na,1,0', 'x.csv'), /no model has requests/);
  });

  it("draws a repeatable stream in proportion to each model's rate, at the total rate", () => {
    const inv = parseInventory('model,size_mb,requests_per_minute\nhot,1,90\ncold,1,10', 'x.csv');
    const w = inventoryWorkload(inv, 20_000, 3);
    assert.deepEqual(w, inventoryWorkload(inv, 20_000, 3));
    const hot = w.requests.filter((r) => r.model === 0).length / w.requests.length;
    assert.ok(Math.abs(hot - 0.9) < 0.01, `hot share ${hot}`);
    assert.ok(Math.abs(w.minutes - 200) < 5, `20 000 requests at 100/min span about 200 min, got ${w.minutes}`);
  });

  it('reads a trace and refuses one out of time order', () => {
    const w = traceWorkload('time_ms,model,size_mb\n0,a,2\n30000,b,4\n60000,a,2\n', 't.csv');
    assert.deepEqual(w.models, [
      { name: 'a', weightsBytes: 2 * MiB },
      { name: 'b', weightsBytes: 4 * MiB },
    ]);
    assert.deepEqual(
      w.requests.map((r) => r.model),
      [0, 1, 0],
    );
    assert.equal(w.minutes, 1);
    assert.throws(
      () => traceWorkload('time_ms,model,size_mb\n10,a,2\n5,a,2\n', 't.csv'),
      /t\.csv:3: time_ms goes backwards \(5 after 10\); sort the trace by time/,
    );
  });
});

describe('sizing planner: predictions', () => {
  it('prices both worker modes with the figures of the committed bench run (bench-results/latest.json), rounded as printed', () => {
    const run = JSON.parse(fs.readFileSync(path.join(kRoot, 'bench-results', 'latest.json'), 'utf8'));
    const tiny = run.cold.find((c: { model: string }) => c.model === 'tiny MLP 16→32→4, spare_workers=0');
    assert.ok(tiny, "latest.json has the tiny MLP's cold start without a spare worker");
    // A 10 MiB model costs its weights plus the measured process (dedicated) or session (shared).
    assertValuesClose(
      [DEDICATED.footprintBytes(10 * MiB) / MiB],
      [Math.round(run.density.perModelMB * 10) / 10 + 10],
      'dedicated MiB',
      1e-9,
    );
    assertValuesClose(
      [SHARED.footprintBytes(10 * MiB) / MiB],
      [Math.round(run.sharedFootprint.sessionMiB * 100) / 100 + 10],
      'shared MiB',
      1e-9,
    );
    assert.equal(DEDICATED.coldLoadMicros(0), Math.round(tiny.p50Ms) * 1000);
    assertValuesClose(
      [SHARED.coldLoadMicros(0)],
      // The median of the shared-hosts bench's three runs.
      [
        Math.round(
          run.shared.map((s: { coldP50Ms: number }) => s.coldP50Ms).sort((a: number, b: number) => a - b)[1] * 10,
        ) * 100,
      ],
      'shared cold load µs',
      1e-6,
    );
  });

  it('predicts every hit and the headroom worked by hand when all models fit', () => {
    // A mode priced by hand: 20 MiB a model plus its weights, 100 MiB fixed. 2 GiB less the 512 MiB
    // reserve (model_memory_reserve_mb) and the 100 MiB leaves 1436 MiB for models; ten equally hot
    // models of 30 MiB take 10 × (20 + 30) = 500 MiB of it, so all fit with 936 MiB to spare.
    const mode: WorkerMode = {
      name: 'shared',
      footprintBytes: (w) => 20 * MiB + w,
      coldLoadMicros: () => 1000,
      fixedBytes: 100 * MiB,
      basis: 'by hand',
    };
    assert.equal(modelBudget(2 * GiB, mode), 1436 * MiB);
    const p = predict(uniform(10, 30), 2 * GiB, { mode, routing: 'one', instances: 1 });
    assert.deepEqual([p.hitRatio, p.loadsPerMinute, p.waitingShare, p.headroomBytes], [1, 0, 0, 936 * MiB]);
  });

  it('shows a hash-routed fleet holding what one instance cannot, and round robin not', () => {
    // 30 equally hot models of 100 MiB: 21 fit in 3 GiB, all 30 in three such instances.
    const w = uniform(30, 100, 6000);
    const at = (mode = DEDICATED, routing: 'one' | 'hash' | 'round-robin' = 'one') =>
      predict(w, 3 * GiB, { mode, routing, instances: 3 });
    assert.ok(at().hitRatio < 0.8, `one instance: ${at().hitRatio}`);
    assert.ok(at(DEDICATED, 'round-robin').hitRatio < 0.8, `round robin: ${at(DEDICATED, 'round-robin').hitRatio}`);
    const hash = at(DEDICATED, 'hash');
    assert.ok(hash.hitRatio > 0.9, `consistent hash: ${hash.hitRatio}`);
    assert.ok(hash.loadsPerMinute < at().loadsPerMinute / 5);
    // A miss waits, and so does every request for the model until its load is done.
    assert.ok(at().waitingShare >= 1 - at().hitRatio);
  });

  it('finds the smallest fleet reaching a target hit ratio, and refuses a model no instance holds', () => {
    const w = uniform(30, 100, 6000);
    const fleet = smallestFleet(w, 3 * GiB, DEDICATED, 0.99);
    assert.ok(fleet && fleet.instances >= 2 && fleet.instances <= 4, `instances ${fleet?.instances}`);
    assert.equal(
      predict(w, 3 * GiB, { mode: DEDICATED, routing: 'hash', instances: fleet.instances - 1 }).hitRatio < 0.99,
      true,
    );
    assert.throws(
      () => predict(uniform(2, 3000), 2 * GiB, { mode: DEDICATED, routing: 'one', instances: 1 }),
      /model m0 needs 30\d\d MiB with dedicated workers, more than the 1536 MiB .* choose a larger instance/,
    );
  });
});

describe('consistent-hash ring', () => {
  const keys = Array.from({ length: 3000 }, (_, i) => `model-${i}`);
  it("spreads keys over servers and moves only a leaving server's keys", () => {
    const three = new HashRing(['a', 'b', 'c']);
    const two = new HashRing(['a', 'b']);
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(three.serverOf(k), (counts.get(three.serverOf(k)) ?? 0) + 1);
    for (const n of counts.values()) assert.ok(n > 700 && n < 1300, `balance: ${[...counts.entries()]}`);
    const moved = keys.filter((k) => three.serverOf(k) !== two.serverOf(k));
    assert.ok(
      moved.every((k) => three.serverOf(k) === 'c'),
      "only c's keys move",
    );
    assert.equal(moved.length, counts.get('c'));
  });
});

describe('npm run plan', () => {
  it('prints the table for both worker modes, one instance and a fleet, with its assumptions', async () => {
    const run = await runNodeScript('plan/main', [
      '--inventory',
      kExample,
      '--instance-memory-gib',
      '8',
      '--instances',
      '3',
      '--requests',
      '20000',
    ]);
    assert.equal(run.code, 0, run.stderr);
    for (const mode of ['dedicated', 'shared']) {
      for (const routing of ['one instance \\| 1', 'consistent hash \\| 3', 'round robin \\| 3']) {
        assert.match(
          run.stdout,
          new RegExp(
            `\\| ${mode} \\| ${routing} \\| \\d+\\.\\d % \\| \\d+\\.\\d \\| \\d+\\.\\d % \\| [\\d ]+ MiB of [\\d ]+ MiB \\|`,
          ),
        );
      }
    }
    assert.match(run.stdout, new RegExp(`Assumptions:\\n- dedicated: .* ${DEDICATED.footprintBytes(0) / MiB} MiB`));
  });

  it('plans from a trace toward a target hit ratio', async () => {
    const file = path.join(tempDir(), 'trace.csv');
    fs.writeFileSync(
      file,
      ['time_ms,model,size_mb', ...Array.from({ length: 400 }, (_, i) => `${i * 100},m${i % 7},50`)].join('\n'),
    );
    const run = await runNodeScript('plan/main', [
      '--trace',
      file,
      '--instance-memory-gib',
      '1',
      '--target-hit-ratio',
      '0.9',
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /dedicated workers: \d+ instances? reach 90\.0 % with model-name hashing/);
  });

  it('prints what docs/deploy.md shows for the example inventory', async () => {
    const readme = fs.readFileSync(path.join(__dirname, '..', '..', '..', '..', 'docs', 'deploy.md'), 'utf8');
    const runs = [...readme.matchAll(/```\n\$ npm run -s plan -- (.*)\n([^`]*)```/g)];
    assert.equal(runs.length, 2);
    for (const [, args, shown] of runs) {
      const run = await runNodeScript('plan/main', args.split(' '));
      assert.equal(run.code, 0, run.stderr);
      assert.ok(
        run.stdout.startsWith(shown),
        `docs/deploy.md's output of plan ${args} is current (regenerate it with that command)`,
      );
    }
  });

  it('gives usage errors that name the flag', async () => {
    const cases: [string[], RegExp][] = [
      [['--inventory', kExample, '--instances', '2'], /--instance-memory-gib is required/],
      [
        ['--inventory', kExample, '--instance-memory-gib', '8'],
        /give exactly one of --instances and --target-hit-ratio/,
      ],
      [['--instance-memory-gib', '8', '--instances', '2'], /give exactly one of --inventory and --trace/],
      [
        ['--inventory', kExample, '--instance-memory-gib', '8', '--target-hit-ratio', '95'],
        /--target-hit-ratio is a fraction below 1/,
      ],
    ];
    for (const [args, message] of cases) {
      const run = await runNodeScript('plan/main', args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    }
  });
});
