/**
 * A typo in config.properties, as a user meets it: `mme-server serve` exits at once with one line on
 * stderr naming the key it probably meant, instead of running without the setting.
 */
import assert from 'node:assert/strict';
import { nearestKey } from '../../src/config/keys';
import { runCliToExit, startCliServer } from '../../harness/cli-server';
import { tempDir, testProperties } from '../../harness/test-server';

describe('unknown config keys', () => {
  it('suggests the key a typo meant, and nothing for an unrelated name', () => {
    assert.equal(nearestKey('max_loaded_model'), 'max_loaded_models');
    assert.equal(nearestKey('default_worker_per_model'), 'default_workers_per_model');
    assert.equal(nearestKey('Model_Store'), 'model_store');
    assert.equal(nearestKey('vmargs'), null);
    assert.equal(nearestKey('number_of_netty_threads'), null);
  });

  it('stop start-up with one line on stderr naming each key, what it probably meant and allow_unknown_keys', async () => {
    const run = await runCliToExit(
      testProperties(tempDir('mme-store-'), 'max_loaded_model=2\ndefault_worker_per_model=1\nvmargs=-Xmx1g'),
    );
    assert.equal(run.code, 1, run.stderr);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, run.stderr);
    assert.match(
      lines[0],
      /^unknown config keys in \S+config\.properties: max_loaded_model \(did you mean max_loaded_models\?\), default_worker_per_model \(did you mean default_workers_per_model\?\), vmargs; fix the name, or set allow_unknown_keys=true/,
    );
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack');
    assert.doesNotMatch(run.stdout, /listening/);
  });

  it('with allow_unknown_keys=true, start and list them once in the start-up line (MMS files carry keys of other servers)', async () => {
    const s = await startCliServer('allow_unknown_keys=true\nvmargs=-Xmx1g\nnumber_of_netty_threads=4');
    try {
      assert.equal(
        s.lines.filter((l) => /unknown keys ignored: vmargs, number_of_netty_threads/.test(l)).length,
        1,
        s.lines.join('\n'),
      );
    } finally {
      await s.stop();
    }
  });
});
