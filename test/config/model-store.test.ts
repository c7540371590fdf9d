/**
 * modelStoreConfig and directoryProblem (src/config/model-store.ts): a store someone named must be
 * a directory; the default may be missing (the server then loads by url); ALL needs a store; the
 * roots default to the store and /opt/ml/models.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { directoryProblem, modelStoreConfig, type DirProblem } from '../../src/config/model-store';
import { tempDir } from '../../harness/test-server';
import { throwsMme } from '../helpers/throws-mme';
import { settingsOf } from './settings-of';

const missing: DirProblem = (d) => `${d} does not exist`;
const there: DirProblem = () => null;

describe('config/model-store: model_store and what depends on it', () => {
  it('starts without a store when the default is missing, and says why', () => {
    const c = modelStoreConfig(settingsOf({}), false, missing);
    assert.equal(c.modelStore, null);
    assert.match(
      c.modelStoreNote,
      /^no model store: model_store's default \/opt\/ml\/models does not exist; models load by url/,
    );
    assert.deepEqual(c.modelRoots, ['/opt/ml/models']);
  });

  it('stops the start when a named store is missing, naming the key and the fix', () => {
    throwsMme(
      () => modelStoreConfig(settingsOf({ model_store: '/data/m' }), false, missing),
      'MME_ERR_CONFIG',
      /^config key model_store: \/data\/m does not exist; create it, or point model_store \(or --model-store\)/,
    );
    // Under SageMaker the platform owns the directory: not checked.
    assert.equal(modelStoreConfig(settingsOf({ model_store: '/data/m' }), true, missing).modelStore, '/data/m');
  });

  it('takes an empty model_store as no store on purpose, and refuses ALL without a store', () => {
    const c = modelStoreConfig(settingsOf({ model_store: ' ' }), false, missing);
    assert.equal(c.modelStore, null);
    assert.match(c.modelStoreNote, /model_store is empty/);
    throwsMme(
      () => modelStoreConfig(settingsOf({ load_models: 'ALL' }), false, missing),
      'MME_ERR_CONFIG',
      /load_models is ALL but model_store's default \/opt\/ml\/models does not exist/,
    );
    throwsMme(
      () => modelStoreConfig(settingsOf({ model_store: '', load_models: 'ALL' }), false, there),
      'MME_ERR_CONFIG',
      /load_models is ALL but model_store is not set/,
    );
  });

  it('roots: the store and /opt/ml/models by default, else model_roots trimmed, without repeats', () => {
    assert.deepEqual(modelStoreConfig(settingsOf({ model_store: '/s' }), false, there).modelRoots, [
      '/s',
      '/opt/ml/models',
    ]);
    assert.deepEqual(
      modelStoreConfig(settingsOf({ model_store: '/s', model_roots: ' /a , /b,/a' }), false, there).modelRoots,
      ['/a', '/b'],
    );
  });

  it('directoryProblem resolves against cwd and tells a file, a missing path and a directory apart', () => {
    const cwd = tempDir('mme-store-cwd-');
    fs.mkdirSync(path.join(cwd, 'dir'));
    fs.writeFileSync(path.join(cwd, 'file'), '');
    const problem = directoryProblem(cwd);
    assert.equal(problem('dir'), null);
    assert.equal(problem(path.join(cwd, 'file')), `${path.join(cwd, 'file')} is not a directory`);
    assert.equal(problem('nope'), `${path.join(cwd, 'nope')} (nope from ${cwd}) does not exist`);
  });
});
