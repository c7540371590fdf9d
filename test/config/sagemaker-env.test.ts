/**
 * src/config/sagemaker-env.ts: the SageMaker platform's variables, read through a kind and range
 * like keys, win over the configured port (not a unix socket's), the mode and the body limit.
 */
import assert from 'node:assert/strict';
import { parseAddress } from '../../src/config/address';
import { applyBindToPort, maxPayloadFromEnv, multiModelFromEnv } from '../../src/config/sagemaker-env';
import type { ListenAddress } from '../../src/config/types';
import { throwsMme } from '../helpers/throws-mme';

const at = (raw: string) => parseAddress(raw) as ListenAddress;

describe('config/sagemaker-env: the platform variables', () => {
  it('SAGEMAKER_BIND_TO_PORT moves both TCP listeners to its port, hosts kept; a unix management socket stays', () => {
    const moved = applyBindToPort(at('http://0.0.0.0:8080'), at('https://[::1]:8081'), {
      SAGEMAKER_BIND_TO_PORT: '9000',
    });
    assert.equal(moved.inferenceAddress.raw, 'http://0.0.0.0:9000');
    assert.equal(moved.managementAddress.raw, 'https://[::1]:9000');
    assert.equal(moved.managementAddress.port, 9000);
    const unixMgmt = at('unix:/run/mme.sock');
    assert.equal(
      applyBindToPort(at('http://h:1'), unixMgmt, { SAGEMAKER_BIND_TO_PORT: '9000' }).managementAddress,
      unixMgmt,
    );
    const same = applyBindToPort(at('http://h:1'), at('http://h:2'), { SAGEMAKER_BIND_TO_PORT: '' });
    assert.deepEqual([same.inferenceAddress.port, same.managementAddress.port], [1, 2]);
  });

  it('refuses a port out of range or a unix inference socket, naming the variable', () => {
    throwsMme(
      () => applyBindToPort(at('http://h:1'), at('http://h:2'), { SAGEMAKER_BIND_TO_PORT: '70000' }),
      'MME_ERR_CONFIG',
      /environment variable SAGEMAKER_BIND_TO_PORT.*1-65535/,
    );
    throwsMme(
      () => applyBindToPort(at('unix:/s'), at('http://h:2'), { SAGEMAKER_BIND_TO_PORT: '8080' }),
      'MME_ERR_CONFIG',
      /SAGEMAKER_BIND_TO_PORT is 8080 but inference_address unix:\/s is a unix socket.*use http:\/\/0\.0\.0\.0:8080/,
    );
  });

  it('SAGEMAKER_MULTI_MODEL is a bool, off when unset or empty', () => {
    assert.equal(multiModelFromEnv({ SAGEMAKER_MULTI_MODEL: 'true' }), true);
    assert.equal(multiModelFromEnv({ SAGEMAKER_MULTI_MODEL: 'false' }), false);
    assert.equal(multiModelFromEnv({ SAGEMAKER_MULTI_MODEL: '' }), false);
    assert.equal(multiModelFromEnv({}), false);
    throwsMme(
      () => multiModelFromEnv({ SAGEMAKER_MULTI_MODEL: 'yes please' }),
      'MME_ERR_CONFIG',
      /SAGEMAKER_MULTI_MODEL/,
    );
  });

  it('SAGEMAKER_MAX_PAYLOAD_IN_MB is MiB, fractions rounded down to a byte, above 0 and at most 1024', () => {
    assert.equal(maxPayloadFromEnv({ SAGEMAKER_MAX_PAYLOAD_IN_MB: '6' }), 6 * 2 ** 20);
    assert.equal(maxPayloadFromEnv({ SAGEMAKER_MAX_PAYLOAD_IN_MB: '0.5' }), 2 ** 19);
    assert.equal(maxPayloadFromEnv({ SAGEMAKER_MAX_PAYLOAD_IN_MB: '1024' }), 2 ** 30);
    assert.equal(maxPayloadFromEnv({}), null);
    for (const bad of ['0', '1025', '-1'])
      throwsMme(() => maxPayloadFromEnv({ SAGEMAKER_MAX_PAYLOAD_IN_MB: bad }), 'MME_ERR_CONFIG', /at most 1024/);
  });
});
