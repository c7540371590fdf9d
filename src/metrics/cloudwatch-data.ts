/** Intervals as PutMetricData statistic sets, and requests cut to the API's limits. */
import type { MetricDatum } from '@aws-sdk/client-cloudwatch';
import { seriesDimensions, type Dimension } from './dimensions';
import type { Snapshot } from './interval';

/**
 * PutMetricData limits (API reference, as of SDK 3.1164): at most 1000 metric data per request and
 * 1 MB per HTTP POST. The byte budget leaves room for the envelope and counts the body before the
 * SDK's gzip, so a request is under the limit compressed or not.
 */
export const kMaxDatumsPerRequest = 1000;
const kMaxRequestBytes = 1_000_000 - 16_384;

export function toDatums(snapshot: Snapshot, endpoint: readonly Dimension[]): MetricDatum[] {
  const timestamp = new Date(snapshot.timestampMs);
  return snapshot.series.map((s) => ({
    MetricName: s.def.name,
    Unit: s.def.unit,
    Timestamp: timestamp,
    Dimensions: seriesDimensions(endpoint, s.model).map(([Name, Value]) => ({ Name, Value })),
    StatisticValues: { SampleCount: s.count, Sum: s.sum, Minimum: s.min, Maximum: s.max },
  }));
}

/** How many data from the front of `queue` fit in one request (at least one). */
export function batchLength(queue: readonly MetricDatum[]): number {
  let bytes = 0;
  let n = 0;
  while (n < queue.length && n < kMaxDatumsPerRequest) {
    // JSON size of the datum; the Date stringifies longer than the epoch seconds on the wire.
    bytes += JSON.stringify(queue[n]).length + 1;
    if (bytes > kMaxRequestBytes && n > 0) break;
    n++;
  }
  return n;
}
