/**
 * Builds the metrics recorder and its sinks from the config. The server hands the recorder the
 * model manager's events and the gateway's invocations (src/gateway), serves it on GET /metrics
 * (src/http/metrics-route.ts), calls start() once listening and close() on shutdown.
 */
import os from 'node:os';
import type { ServerConfig } from '../config/types';
import { CloudWatchSink } from './cloudwatch';
import { endpointDimensions } from './dimensions';
import { emfRenderer } from './emf';
import { LineSink } from './lines';
import { mmsRenderer } from './mms-log';
import { PrometheusMetrics } from './prometheus';
import { MetricsRecorder, type RecorderParts } from './recorder';
import type { IntervalSink } from './sink';
import { SystemSampler } from './system';

export type { InvocationEvent, MetricsRecorder } from './recorder';

export function createMetrics(config: ServerConfig, opts: Pick<RecorderParts, 'log' | 'now'>): MetricsRecorder {
  const dimensions = endpointDimensions(config);
  const sinks: IntervalSink[] = [];
  if (config.metricsCloudwatch) {
    sinks.push(
      new CloudWatchSink({
        namespace: config.metricsNamespace,
        region: config.metricsCloudwatchRegion,
        endpoint: config.metricsCloudwatchEndpoint,
        maxBuffered: config.metricsCloudwatchMaxBuffered,
        dimensions,
        log: opts.log,
      }),
    );
  }
  if (config.metricsEmf !== null)
    sinks.push(new LineSink('emf', config.metricsEmf, emfRenderer(config.metricsNamespace, dimensions), opts.log));
  if (config.metricsMmsLog !== null)
    sinks.push(new LineSink('mms_log', config.metricsMmsLog, mmsRenderer(os.hostname()), opts.log));

  const sampler = new SystemSampler({ diskPath: config.modelStore ?? '/' });
  const outputs = [...sinks.map((s) => s.name), ...(config.metricsPrometheus ? ['prometheus'] : [])];
  opts.log(
    `metrics: every ${config.metricTimeIntervalSeconds} s to ${outputs.join(', ') || 'nowhere (every metrics sink is off)'}`,
  );
  return new MetricsRecorder({
    intervalMs: config.metricTimeIntervalSeconds * 1000,
    perModel: config.metricsPerModel,
    sinks,
    prometheus: config.metricsPrometheus ? new PrometheusMetrics(config.metricsPerModel, sinks) : null,
    sampleSystem: () => sampler.sample(),
    log: opts.log,
    now: opts.now,
  });
}
