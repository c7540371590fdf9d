/**
 * applyEnvOverrides (src/config/env-settings.ts): MMS_<KEY> variables override the file, but only
 * when the file says enable_envvars_config=true, and never that key itself.
 */
import assert from 'node:assert/strict';
import { applyEnvOverrides } from '../../src/config/env-settings';
import type { Setting } from '../../src/config/values';

const file = (enable: string | null): Map<string, Setting> =>
  new Map<string, Setting>([
    ['default_workers_per_model', { value: '1', from: 'in c' }],
    ...(enable === null ? [] : ([['enable_envvars_config', { value: enable, from: 'in c' }]] as const)),
  ]);

const env = {
  MMS_DEFAULT_WORKERS_PER_MODEL: '3',
  MMS_JOB_QUEUE_SIZE: '7',
  MMS_ENABLE_ENVVARS_CONFIG: 'false',
  MMS_NOT_A_KEY: 'x',
};

describe('config/env-settings: MMS_<KEY> overrides', () => {
  it('override the file and name the variable, when the file enables them', () => {
    const s = file('true');
    applyEnvOverrides(s, env);
    assert.deepEqual(s.get('default_workers_per_model'), {
      value: '3',
      from: 'by environment variable MMS_DEFAULT_WORKERS_PER_MODEL',
    });
    assert.equal(s.get('job_queue_size')?.value, '7');
    assert.equal(s.get('enable_envvars_config')?.value, 'true', 'not overridable itself');
    assert.equal(s.has('not_a_key'), false);
  });

  it('change nothing when the file leaves them off or disables them', () => {
    for (const enable of [null, 'false']) {
      const s = file(enable);
      applyEnvOverrides(s, env);
      assert.equal(s.get('default_workers_per_model')?.value, '1', String(enable));
      assert.equal(s.has('job_queue_size'), false);
    }
  });
});
