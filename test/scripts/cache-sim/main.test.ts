import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { renderCacheSimMarkdown, runCacheSim, type SimRow } from '../../../scripts/cache-sim/main';
import { renderClassesMarkdown, runClasses } from '../../../scripts/cache-sim/classes';
import { DOCS } from '../../../scripts/docs-tables';

describe('cache-sim: the docs/cache.md table and the eviction_policy default', function () {
  let rows: SimRow[];

  before(function () {
    this.timeout(120_000);
    rows = runCacheSim();
  });

  it('GDSF spends less load time than LRU and hits more, on every trace', () => {
    for (const trace of new Set(rows.map((r) => r.trace))) {
      const [lru, gdsf] = ['LRU', 'GDSF'].map(
        (policy) => rows.find((r) => r.trace === trace && r.policy === policy)?.result,
      );
      assert.ok(lru && gdsf, trace);
      assert.ok(
        gdsf.loadMicros < lru.loadMicros,
        `${trace}: GDSF load time ${gdsf.loadMicros} µs, LRU ${lru.loadMicros} µs`,
      );
      assert.ok(gdsf.hits > lru.hits, `${trace}: GDSF ${gdsf.hits} hits, LRU ${lru.hits}`);
    }
  });

  it('docs/cache.md has the current section (regenerate: node dist/scripts/cache-sim/main.js, between the cache-sim markers)', () => {
    const section = /<!-- cache-sim:start -->\n([\s\S]*?)\n<!-- cache-sim:end -->/.exec(
      fs.readFileSync(path.join(DOCS, 'cache.md'), 'utf8'),
    );
    assert.ok(section, 'docs/cache.md has no <!-- cache-sim:start --> … <!-- cache-sim:end --> section');
    assert.equal(section[1], renderCacheSimMarkdown(rows));
  });

  it('eviction classes: the high-priority tail hits more, the rest less, and docs/cache.md has the current section', () => {
    const classes = runClasses();
    for (const policy of ['LRU', 'GDSF']) {
      const [plain, high] = [false, true].map((c) => classes.find((r) => r.policy === policy && r.classes === c)!);
      assert.ok(
        high.tailHits > plain.tailHits,
        `${policy}: tail hits ${high.tailHits} with classes, ${plain.tailHits} without`,
      );
      assert.ok(high.result.hits - high.tailHits < plain.result.hits - plain.tailHits, `${policy}: the rest pays`);
    }
    const section = /<!-- cache-sim-classes:start -->\n([\s\S]*?)\n<!-- cache-sim-classes:end -->/.exec(
      fs.readFileSync(path.join(DOCS, 'cache.md'), 'utf8'),
    );
    assert.ok(
      section,
      'docs/cache.md has no <!-- cache-sim-classes:start --> … <!-- cache-sim-classes:end --> section',
    );
    assert.equal(section[1], renderClassesMarkdown(classes));
  });
});
