/** Metrics (CloudWatch, EMF, MMS lines, Prometheus) and the server log. */
import { kLogFormats, kLogLevels } from '../../logger';
import { address, atLeast, bool, int, oneOf, seconds, str, url, type KeySpec } from './kinds';

export const kMetricsKeys = {
  metric_time_interval: int('60', seconds(1), {
    field: 'metricTimeIntervalSeconds',
    doc: 'Seconds between system metric collections (CPU, memory, disk).',
  }),
  metrics_endpoint_name: str(null, 'my-endpoint', {
    doc: "EndpointName dimension on every metric (CloudWatch, EMF). SageMaker does not tell the container its endpoint name, so pass it in the model's Environment and write metrics_endpoint_name=$$ENDPOINT_NAME$$; unset = no EndpointName dimension.",
  }),
  metrics_variant_name: str(null, 'AllTraffic', {
    doc: 'VariantName dimension on every metric, like metrics_endpoint_name; unset = no VariantName dimension.',
  }),
  metrics_per_model_dimension: bool('false', {
    field: 'metricsPerModel',
    doc: 'true = request and model-lifecycle metrics are also published per model (ModelName dimension, Prometheus label model). CloudWatch bills every metric and dimension value, so turn it on only with a few models.',
  }),
  metrics_namespace: str('SageMakerMME', 'MyCompany/MME', {
    field: null,
    doc: 'CloudWatch namespace of the CloudWatch and EMF sinks (AWS/ namespaces are reserved for AWS). Change it to keep several deployments apart.',
  }),
  metrics_cloudwatch: bool('false', {
    doc: "true = send every metric interval to CloudWatch with PutMetricData, credentials from the AWS SDK's default chain (the SageMaker execution role needs cloudwatch:PutMetricData).",
  }),
  metrics_cloudwatch_region: str(null, 'us-east-1', {
    doc: "Region for PutMetricData; unset = the AWS SDK's default (AWS_REGION, then the shared config file).",
  }),
  metrics_cloudwatch_endpoint: url(null, 'https://monitoring.us-east-1.amazonaws.com', {
    doc: "CloudWatch endpoint URL override, for a VPC endpoint or a local CloudWatch stand-in; unset = the region's public endpoint.",
  }),
  metrics_cloudwatch_max_buffered: int('10000', atLeast(1), {
    doc: 'Metric data points kept while CloudWatch is unreachable; beyond it the oldest are dropped and counted (mme_metrics_dropped_total). Raise it to ride out longer outages.',
  }),
  metrics_emf: str('off', 'stdout', {
    field: null,
    doc: 'CloudWatch Embedded Metric Format: off, stdout or a file path that gets one JSON object per line per metric interval. stdout suits SageMaker, whose container output goes to CloudWatch Logs.',
  }),
  metrics_mms_log: str('off', 'stdout', {
    field: null,
    doc: "MMS-style metric lines (CPUUtilization.Percent:12.5|#Level:Host|#hostname:h,timestamp:1700000000): off, stdout or a file path, one line per metric per interval, for tools that parse MMS's mms_metrics.log.",
  }),
  metrics_prometheus: bool('true', {
    doc: 'true = serve Prometheus text format at GET /metrics (on metrics_address, else on the management listener); false = no /metrics and no per-request histogram updates.',
  }),
  metrics_address: address(null, {
    field: null,
    example: 'http://0.0.0.0:9100',
    doc: 'A separate listener for GET /metrics (http://host:port or unix:/path); unset = /metrics is on the management listener. Use it to scrape without exposing the management API.',
  }),
  access_log: bool('false', {
    doc: "true = one line per request in the server log, as MMS's access log: client address, method and path, status, milliseconds and the x-request-id.",
  }),
  log_format: oneOf(kLogFormats, 'text', {
    doc: "text = one line per event: ISO time, level, message; json = one JSON object per line (ts, level, msg, and model, requestId, worker, pid where the event has them) for log collectors. Worker processes' output goes through the same log in either format.",
  }),
  log_level: oneOf(kLogLevels, 'info', {
    doc: 'Least severe level written: info (everything: start-up, loads, evictions, access log, client errors), warn (workers restarted or killed, timeouts, dropped metrics) or error (failed loads, server faults, 5xx answers).',
  }),
} as const satisfies Record<string, KeySpec>;
