/** The metrics keys checked against more than their kind, so that a mistake stops start-up instead of failing every interval. */
import { portClash, sameAddress } from './address';
import type { Settings } from './settings';
import type { ListenAddress, ServerConfig } from './types';

/** CloudWatch's namespace alphabet (PutMetricData rejects anything else, at the first interval). */
const kNamespace = /^[0-9A-Za-z.\-_/#: ]{1,255}$/;

export function metricsConfig(
  s: Settings,
  inference: ListenAddress,
  management: ListenAddress,
): Pick<ServerConfig, 'metricsNamespace' | 'metricsEmf' | 'metricsMmsLog' | 'metricsAddress'> {
  const namespace = s.read('metrics_namespace');
  if (!kNamespace.test(namespace) || /^AWS\//i.test(namespace)) {
    throw s.invalid(
      'metrics_namespace',
      namespace,
      'is not a namespace CloudWatch accepts',
      '1-255 of A-Z a-z 0-9 . - _ / # : and space, not starting with AWS/',
      'metrics_namespace=SageMakerMME',
    );
  }
  return {
    metricsNamespace: namespace,
    metricsEmf: destination(s.read('metrics_emf')),
    metricsMmsLog: destination(s.read('metrics_mms_log')),
    metricsAddress: metricsAddress(s, inference, management),
  };
}

/** off = null; stdout in any case = 'stdout'; anything else is a file path. */
function destination(value: string): string | null {
  const lower = value.toLowerCase();
  if (lower === 'off') return null;
  return lower === 'stdout' ? 'stdout' : value;
}

/** null when /metrics belongs on the management listener (unset, or the same address written out). */
function metricsAddress(s: Settings, inference: ListenAddress, management: ListenAddress): ListenAddress | null {
  const address = s.read('metrics_address');
  if (address === null || sameAddress(address, management)) return null;
  if (sameAddress(address, inference) || portClash(address, inference) || portClash(address, management)) {
    throw s.invalid(
      'metrics_address',
      address.raw,
      'collides with inference_address or management_address',
      'unset (/metrics on the management listener) or a port of its own',
      'metrics_address=http://0.0.0.0:9100',
    );
  }
  return address;
}
