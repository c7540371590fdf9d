/**
 * The report's rows at other settings (scripts/bench/report/figures.ts): each throughput and latency
 * row of a run that measured the defaults and the image on SageMaker has their rows beside it, read
 * from their own figures; the batching row has its in-process batcher beside it. Built on the
 * committed latest.json, with the other settings' figures made up so that each is told apart.
 */
import assert from 'node:assert/strict';
import { figureRows } from '../../../scripts/bench/report/figures';
import { readRun, type BenchRun, type SettingsFigures } from '../../../scripts/bench/report/results';

/** The run's own figures at other settings, one run each, with the hot path's ratio set to `ratio`. */
function figuresOf(run: BenchRun, ratio: number): SettingsFigures {
  return {
    hot: [{ ...run.hot[0], throughputRatio: ratio }],
    tail: [run.tail[0]],
    connections: run.connections,
    noisy: [run.noisy[0]],
    plane: [run.plane[0]],
    batching: [{ ...run.batching[0], inProcessRps: 1000, inProcessRatio: ratio }],
    grpc: [run.grpc[0]],
  };
}

describe('scripts/bench/report/figures: rows at other settings and the batching limit', () => {
  const committed = readRun();
  const run: BenchRun = {
    ...committed,
    batching: committed.batching.map((b, i) => ({ ...b, inProcessRps: 1000, inProcessRatio: [0.95, 0.85, 0.92][i] })),
    settings: { defaults: figuresOf(committed, 0.123), sagemaker: figuresOf(committed, 0.456) },
  };
  const rows = figureRows(run);
  const ids = rows.map((r) => r.id);

  it('puts the ·def and ·sm rows right after each throughput and latency row, and nowhere else', () => {
    assert.deepEqual(ids.slice(0, 6), ['1', '1·def', '1·sm', '1b', '1b·def', '1b·sm']);
    for (const id of ['2g', '2k', '2c', '2p', '3', '3b', '9', '9d', '11'])
      assert.deepEqual(ids.slice(ids.indexOf(id), ids.indexOf(id) + 3), [id, `${id}·def`, `${id}·sm`]);
    for (const id of ['2m', '4', '5', '7', '7c', '10'])
      assert.equal(ids.includes(`${id}·def`), false, `row ${id} is not measured at other settings`);
  });

  it("reads each settings' row from its own figures, judged against the tuned row's target", () => {
    const row = (id: string) => rows.find((r) => r.id === id)!;
    assert.match(row('1·def').measured, /\*\*0\.12×\*\*/);
    assert.match(row('1·sm').measured, /\*\*0\.46×\*\*/);
    assert.equal(row('1·def').target, row('1').target);
    assert.equal(row('1·def').met, false);
    assert.match(row('1·sm').figure, /^row 1 as the image runs on SageMaker/);
  });

  it('judges batch 16 against the in-process batcher on the median of the runs (row 3b, ≥ 0.9×)', () => {
    const limit = rows.find((r) => r.id === '3b')!;
    assert.equal(limit.target, '≥ 0.9×');
    assert.equal(limit.met, true);
    assert.match(limit.measured, /vs 1000 req\/s = \*\*0\.92×\*\* \(runs: 0\.95×, 0\.85×, 0\.92×\)/);
  });

  it('renders a run from before part 28 (no other settings, no in-process batcher) as it did', () => {
    const { settings: _none, ...before } = committed;
    const batching = committed.batching.map(({ inProcessRps: _rps, inProcessRatio: _ratio, ...b }) => b);
    const old = figureRows({ ...before, batching }).map((r) => r.id);
    assert.equal(
      old.some((id) => id.includes('·') || id === '3b'),
      false,
    );
    assert.deepEqual(
      ids.filter((id) => !id.includes('·') && id !== '3b'),
      old,
    );
  });
});

describe('scripts/bench/report/figures: the C-client gRPC pair and the model count', () => {
  const committed = readRun();
  const pair = (rpsRatio: number, cpuRatio: number) => ({
    http: { rps: 1000, cpuMicros: 100, serverCpuMicros: 50, succeeded: 1, failed: 0 },
    grpc: { rps: 1000 * rpsRatio, cpuMicros: 100 * cpuRatio, serverCpuMicros: 60, succeeded: 1, failed: 0 },
    rpsRatio,
    cpuRatio,
  });
  const rowsOf = (extra: Partial<BenchRun>) => new Map(figureRows({ ...committed, ...extra }).map((r) => [r.id, r]));

  it('judges gRPC over HTTP on the median of the h2load pairs (9e ≥ 1×, 9f ≤ 1.1×)', () => {
    const pairs = [pair(0.9, 1.3), pair(1.05, 1.05), pair(1.2, 1.0)];
    const rows = rowsOf({
      grpcH2load: { command: 'h2load …', server: 'this build', pairs, rpsRatio: 1.05, cpuRatio: 1.05 },
    });
    assert.equal(rows.get('9e')!.met, true);
    assert.match(rows.get('9e')!.measured, /1050 vs 1000 req\/s = \*\*1\.05×\*\* \(runs: 0\.90×, 1\.05×, 1\.20×\)/);
    assert.equal(rows.get('9f')!.target, '≤ 1.1×');
    assert.equal(rows.get('9f')!.met, true);
  });

  it('names why the C-client pair did not run, and judges nothing', () => {
    const rows = rowsOf({ grpcH2load: { skipped: 'h2load is not installed: apt-get install nghttp2-client' } });
    assert.equal(rows.get('9e')!.measured, 'not run: h2load is not installed: apt-get install nghttp2-client');
    assert.equal(rows.get('9e')!.target, undefined);
    assert.equal(rows.has('9f'), false);
  });

  it('judges the last model-count checkpoint: tree PSS ≤ 8192 MB (7f), load p50 ≤ 20 ms (7g)', () => {
    const memory = { treePssMB: 6806, treeRssMB: 7049, serverPssMB: 1221, serverRssMB: 1300, hosts: 30 };
    const at = (models: number, p50: number) => ({
      models,
      memory,
      loads: { p50, p99: 72, p999: 90 },
      cpuPerLoadMicros: 3590,
      firstPageMs: 1,
      middlePageMs: 1,
      pingMs: 1,
    });
    const modelCount = {
      quick: false,
      targets: [100_000],
      checkpoints: [at(10_000, 12), at(100_000, 21.4)],
      stoppedEarly: null,
      random: null,
      structures: [],
      storm: [],
    };
    const rows = rowsOf({ modelCount });
    assert.equal(rows.get('7f')!.met, true);
    assert.match(rows.get('7f')!.figure, /^100000 tiny models/);
    assert.equal(rows.get('7g')!.met, false);
    assert.match(rows.get('7g')!.measured, /\*\*21\.40 ms\*\*/);
  });
});
