/**
 * fileSettings and unknownKeysError (src/config/file-settings.ts): the config file's keys with where
 * they came from, $$VAR$$ replaced from the environment literally, and keys no table knows listed
 * with a did-you-mean.
 */
import assert from 'node:assert/strict';
import { fileSettings, unknownKeysError } from '../../src/config/file-settings';
import { throwsMme } from '../helpers/throws-mme';

describe('config/file-settings: the config file', () => {
  it('keeps each value with the file it came from, and lists the keys no table knows', () => {
    const { settings, unknownKeys } = fileSettings(
      'max_loaded_model=2\ndefault_workers_per_model=1\n',
      'c.properties',
      {},
    );
    assert.deepEqual(settings.get('default_workers_per_model'), { value: '1', from: 'in c.properties' });
    assert.deepEqual(unknownKeys, ['max_loaded_model']);
    assert.equal(fileSettings(null, null, {}).settings.size, 0);
  });

  it('replaces every $$VAR$$ from the environment literally, leaving $$X$$ (one letter) and lone $ as written', () => {
    const env = { TOKEN: 'a$&b$1', DIR: '/srv' };
    const { settings } = fileSettings('inference_token=$$TOKEN$$,$$TOKEN$$\nmodel_store=$$DIR$$/m$$X$$ $5', 'c', env);
    assert.equal(settings.get('inference_token')?.value, 'a$&b$1,a$&b$1');
    assert.equal(settings.get('model_store')?.value, '/srv/m$$X$$ $5');
  });

  it('refuses a placeholder whose variable is unset, naming the key and the variable', () => {
    throwsMme(
      () => fileSettings('model_store=$$NOPE$$', 'c', {}),
      'MME_ERR_CONFIG',
      /^config key model_store uses \$\$NOPE\$\$ but environment variable NOPE is not set$/,
    );
  });

  it('names each unknown key with its nearest known one, and the way out', () => {
    const one = unknownKeysError(['max_loaded_model'], 'c.properties');
    assert.equal(one.code, 'MME_ERR_CONFIG');
    assert.match(
      one.message,
      /^unknown config key in c\.properties: max_loaded_model \(did you mean max_loaded_models\?\); /,
    );
    assert.match(one.message, /allow_unknown_keys=true/);
    const two = unknownKeysError(['zzzzzzzzzzzz', 'x'.repeat(300)], null);
    assert.match(two.message, /^unknown config keys in the config file: zzzzzzzzzzzz, x{100}; /);
  });
});
