/**
 * tlsConfig and inferenceTokens (src/config/tls-config.ts): the tls_* files go together, an https
 * listener needs them, a certificate with a plain-text inference_address is refused; the token
 * list has no empty or spaced token, and none under SageMaker.
 */
import assert from 'node:assert/strict';
import { parseAddress } from '../../src/config/address';
import { inferenceTokens, tlsConfig } from '../../src/config/tls-config';
import type { ListenAddress } from '../../src/config/types';
import { throwsMme } from '../helpers/throws-mme';
import { settingsOf } from './settings-of';

const listeners = (inference: string, management = 'http://127.0.0.1:8081') =>
  [
    ['inference_address', parseAddress(inference) as ListenAddress],
    ['management_address', parseAddress(management) as ListenAddress],
    ['metrics_address', null],
  ] as const;

describe('config/tls-config: TLS files and inference tokens', () => {
  it('serves TLS with both files, management may stay http', () => {
    const files = { tls_cert_file: '/c.pem', tls_key_file: '/k.pem' };
    assert.deepEqual(tlsConfig(settingsOf(files), listeners('https://0.0.0.0:8443')), {
      certFile: '/c.pem',
      keyFile: '/k.pem',
      clientCaFile: null,
    });
    assert.equal(tlsConfig(settingsOf({}), listeners('http://0.0.0.0:8080')), null);
  });

  it('refuses one file alone, or a client CA without them, naming what is set and where', () => {
    throwsMme(
      () => tlsConfig(settingsOf({ tls_key_file: '/k' }), listeners('http://h:1')),
      'MME_ERR_CONFIG',
      /but only tls_key_file is set \(set in c\.properties\); set both files for TLS, or none$/,
    );
    throwsMme(
      () => tlsConfig(settingsOf({ tls_client_ca_file: '/ca' }), listeners('http://h:1')),
      'MME_ERR_CONFIG',
      /only tls_client_ca_file is set/,
    );
  });

  it('refuses https without a certificate, and a certificate with an http inference_address', () => {
    throwsMme(
      () => tlsConfig(settingsOf({}), listeners('http://h:1', 'https://h:2')),
      'MME_ERR_CONFIG',
      /^management_address https:\/\/h:2 is https:\/\/ but no certificate is configured/,
    );
    throwsMme(
      () => tlsConfig(settingsOf({ tls_cert_file: '/c', tls_key_file: '/k' }), listeners('http://0.0.0.0:8080')),
      'MME_ERR_CONFIG',
      /inference_address http:\/\/0\.0\.0\.0:8080 is http:\/\/.*write https:\/\/0\.0\.0\.0:8080/,
    );
  });

  it('inference_token: a trimmed comma list; none, empty or spaced tokens, or SageMaker, refused', () => {
    assert.deepEqual(inferenceTokens(settingsOf({}), false), []);
    assert.deepEqual(inferenceTokens(settingsOf({ inference_token: ' new , old' }), false), ['new', 'old']);
    for (const bad of ['a,,b', 'a b', 'a,'])
      throwsMme(
        () => inferenceTokens(settingsOf({ inference_token: bad }), false),
        'MME_ERR_CONFIG',
        /empty token or one with a space/,
      );
    throwsMme(
      () => inferenceTokens(settingsOf({ inference_token: 't' }), true),
      'MME_ERR_CONFIG',
      /SAGEMAKER_MULTI_MODEL=true: SageMaker's platform sends no token/,
    );
  });
});
