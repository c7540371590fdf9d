/** The CloudWatch dimensions of a series, shared by the CloudWatch and EMF sinks. */
import type { ServerConfig } from '../config/types';

export type Dimension = readonly [name: string, value: string];

/** EndpointName and VariantName as far as they are known, in SageMaker's order. */
export function endpointDimensions(
  config: Pick<ServerConfig, 'metricsEndpointName' | 'metricsVariantName'>,
): Dimension[] {
  const dims: Dimension[] = [];
  if (config.metricsEndpointName !== null) dims.push(['EndpointName', config.metricsEndpointName]);
  if (config.metricsVariantName !== null) dims.push(['VariantName', config.metricsVariantName]);
  return dims;
}

export function seriesDimensions(endpoint: readonly Dimension[], model: string | null): readonly Dimension[] {
  return model === null ? endpoint : [...endpoint, ['ModelName', model]];
}
