/**
 * metricsConfig (src/config/metrics-config.ts): a namespace CloudWatch accepts (not AWS/), sinks as
 * off / stdout / a file, and a metrics_address of its own or none.
 */
import assert from 'node:assert/strict';
import { parseAddress } from '../../src/config/address';
import { metricsConfig } from '../../src/config/metrics-config';
import type { ListenAddress } from '../../src/config/types';
import { throwsMme } from '../helpers/throws-mme';
import { settingsOf } from './settings-of';

const at = (raw: string) => parseAddress(raw) as ListenAddress;
const inference = at('http://0.0.0.0:8080');
const management = at('http://127.0.0.1:8081');
const config = (values: Record<string, string>) => metricsConfig(settingsOf(values), inference, management);

describe('config/metrics-config: the metrics keys checked at start', () => {
  it('reads the sinks: off is none, stdout in any case is stdout, anything else a file', () => {
    const c = config({ metrics_namespace: 'My Co/MME:#1', metrics_emf: 'STDOUT', metrics_mms_log: '/var/log/m.log' });
    assert.equal(c.metricsNamespace, 'My Co/MME:#1');
    assert.equal(c.metricsEmf, 'stdout');
    assert.equal(c.metricsMmsLog, '/var/log/m.log');
    assert.equal(config({ metrics_emf: 'Off' }).metricsEmf, null);
  });

  it("refuses a namespace CloudWatch would refuse at the first interval, or AWS's own", () => {
    for (const bad of ['aws/x', 'AWS/EC2', 'a|b', 'x'.repeat(256)])
      throwsMme(
        () => config({ metrics_namespace: bad }),
        'MME_ERR_CONFIG',
        /metrics_namespace.*not a namespace CloudWatch accepts/,
      );
  });

  it('puts /metrics on the management listener when metrics_address is unset or the same; refuses a clash', () => {
    assert.equal(config({}).metricsAddress, null);
    assert.equal(config({ metrics_address: 'http://127.0.0.1:8081' }).metricsAddress, null);
    assert.equal(config({ metrics_address: 'http://0.0.0.0:9100' }).metricsAddress?.port, 9100);
    for (const clash of ['http://0.0.0.0:8080', 'http://127.0.0.1:8080', 'http://0.0.0.0:8081'])
      throwsMme(
        () => config({ metrics_address: clash }),
        'MME_ERR_CONFIG',
        /metrics_address.*collides with inference_address or management_address/,
      );
  });
});
