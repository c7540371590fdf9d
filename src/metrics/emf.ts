/**
 * CloudWatch Embedded Metric Format (reference §2.3): one JSON document per interval and dimension
 * set. EMF has no statistic sets, so each metric carries its interval value (a count for 'sum'
 * metrics, the average otherwise) and the exact set rides along in the non-metric member
 * "Statistics", for Logs Insights queries.
 */
import { seriesDimensions, type Dimension } from './dimensions';
import { intervalValue, type Series, type Snapshot } from './interval';

export function emfRenderer(namespace: string, endpoint: readonly Dimension[]): (snapshot: Snapshot) => string[] {
  return (snapshot) =>
    [...groupByModel(snapshot.series)].map(([model, series]) => {
      const dims = seriesDimensions(endpoint, model);
      const doc: Record<string, unknown> = {
        _aws: {
          Timestamp: snapshot.timestampMs,
          CloudWatchMetrics: [
            {
              Namespace: namespace,
              Dimensions: [dims.map(([name]) => name)],
              Metrics: series.map((s) => ({ Name: s.def.name, Unit: s.def.unit })),
            },
          ],
        },
      };
      for (const [name, value] of dims) doc[name] = value;
      const statistics: Record<string, unknown> = {};
      for (const s of series) {
        doc[s.def.name] = intervalValue(s);
        statistics[s.def.name] = { SampleCount: s.count, Sum: s.sum, Minimum: s.min, Maximum: s.max };
      }
      doc.Statistics = statistics;
      return JSON.stringify(doc);
    });
}

function groupByModel(series: readonly Series[]): Map<string | null, Series[]> {
  const groups = new Map<string | null, Series[]>([[null, []]]);
  for (const s of series) {
    const group = groups.get(s.model);
    if (group) group.push(s);
    else groups.set(s.model, [s]);
  }
  if (groups.get(null)!.length === 0) groups.delete(null);
  return groups;
}
