/**
 * The CloudWatch dimensions of a series (src/metrics/dimensions.ts): the endpoint's, as far as
 * they are known and in SageMaker's order, then the model's for a per-model series.
 */
import assert from 'node:assert/strict';
import { endpointDimensions, seriesDimensions } from '../../src/metrics/dimensions';

describe('metrics/dimensions: what a series is filed under', () => {
  it('gives EndpointName then VariantName, each only when known', () => {
    assert.deepEqual(endpointDimensions({ metricsEndpointName: 'ep', metricsVariantName: 'v1' }), [
      ['EndpointName', 'ep'],
      ['VariantName', 'v1'],
    ]);
    assert.deepEqual(endpointDimensions({ metricsEndpointName: null, metricsVariantName: 'v1' }), [
      ['VariantName', 'v1'],
    ]);
    assert.deepEqual(endpointDimensions({ metricsEndpointName: null, metricsVariantName: null }), []);
  });

  it("adds ModelName last for a model's series, and leaves the endpoint's own list as it was", () => {
    const endpoint = endpointDimensions({ metricsEndpointName: 'ep', metricsVariantName: null });
    assert.deepEqual(seriesDimensions(endpoint, 'm'), [
      ['EndpointName', 'ep'],
      ['ModelName', 'm'],
    ]);
    assert.equal(seriesDimensions(endpoint, null), endpoint, 'a server-wide series: the endpoint dimensions alone');
    assert.deepEqual(endpoint, [['EndpointName', 'ep']]);
  });
});
