/**
 * Every figure the README, docs/ and bench-results quote comes from a committed raw output: what
 * bench-results/latest.json renders must be what latest.md, the charts and the planner say
 * (docs/performance.md's section, the README's summary and docs/deploy.md's plans are checked with
 * the other generated sections, in tables.test.ts).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { charts, svgHeader } from '../../scripts/bench/report/charts';
import { renderLatestMd } from '../../scripts/bench/report/report';
import { LATEST_MD, readRun, RESULTS_DIR } from '../../scripts/bench/report/results';
import { ASSUMPTIONS } from '../../scripts/plan/assumptions';

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .flatMap((d) => (d.isFile() ? [path.relative(dir, path.join(d.parentPath, d.name))] : []));
}

describe('docs: figures tied to the committed bench run', () => {
  const run = readRun();

  it('bench-results/latest.md is what latest.json renders (regenerate: node dist/scripts/bench/report/report.js)', () => {
    assert.equal(fs.readFileSync(LATEST_MD, 'utf8'), renderLatestMd(run));
  });

  it('every chart was drawn from latest.json as it is (redraw: node dist/scripts/bench/report/charts.js)', () => {
    const { charts: list } = charts(run);
    assert.ok(list.length >= 3, 'the connections, latency CDF and cache simulator charts at least');
    for (const chart of list) {
      const file = path.join(RESULTS_DIR, chart.file);
      assert.ok(fs.existsSync(file), `bench-results/${chart.file} exists`);
      const [first, second] = fs.readFileSync(file, 'utf8').split('\n', 2);
      assert.equal(first, svgHeader(chart), `bench-results/${chart.file} was drawn from this spec`);
      assert.match(second, /^<svg /, `bench-results/${chart.file} is an SVG`);
    }
    const drawn = new Set(list.map((c) => c.file));
    const stale = filesUnder(RESULTS_DIR).filter((f) => f.endsWith('.svg') && !drawn.has(f));
    assert.deepEqual(stale, [], 'no chart the committed run does not draw');
  });

  it('every markdown file under bench-results has the raw JSON it quotes beside it', () => {
    const files = filesUnder(RESULTS_DIR);
    // At the top only latest.md, which latest.json renders; a write-up of other runs has a folder with their
    // JSON (a V8 CPU profile is JSON too: a profile's write-up sits beside the .cpuprofile it reads).
    const raw = /\.(json|cpuprofile|cpuprofile\.gz)$/;
    const dirsWithJson = new Set(files.filter((f) => raw.test(f) && f.includes(path.sep)).map((f) => path.dirname(f)));
    const orphans = files.filter((f) => f.endsWith('.md') && f !== 'latest.md' && !dirsWithJson.has(path.dirname(f)));
    assert.deepEqual(orphans, [], 'markdown under bench-results without a committed JSON in its folder');
  });

  it("prices the planner with the run's figures, rounded as printed", () => {
    const tiny = run.cold.find((c) => c.model === 'tiny MLP 16→32→4, spare_workers=0');
    assert.ok(tiny, "latest.json has the tiny MLP's cold start without a spare worker");
    const coldLoads = run.shared.map((s) => s.coldP50Ms).sort((a, b) => a - b);
    assert.equal(coldLoads.length, 3, 'the shared-hosts bench ran three times');
    assert.deepEqual(
      {
        dedicatedProcessMiB: ASSUMPTIONS.dedicatedProcessMiB,
        dedicatedColdLoadMs: ASSUMPTIONS.dedicatedColdLoadMs,
        sharedColdLoadMs: ASSUMPTIONS.sharedColdLoadMs,
        sharedSessionMiB: ASSUMPTIONS.sharedSessionMiB,
        sharedProcessMiB: ASSUMPTIONS.sharedProcessMiB,
        sharedHosts: ASSUMPTIONS.sharedHosts,
      },
      {
        dedicatedProcessMiB: Math.round(run.density.perModelMB * 10) / 10,
        dedicatedColdLoadMs: Math.round(tiny.p50Ms),
        sharedColdLoadMs: Math.round(coldLoads[1] * 10) / 10,
        sharedSessionMiB: Math.round(run.sharedFootprint.sessionMiB * 100) / 100,
        sharedProcessMiB: Math.round(run.sharedFootprint.hostMiB),
        sharedHosts: run.sharedFootprint.hosts,
      },
    );
  });
});
