/** Configs and events for the metrics tests. */
import { resolveConfig } from '../../src/config/resolve';
import type { ServerConfig } from '../../src/config/types';
import type { InvocationEvent } from '../../src/metrics';
import type { Snapshot } from '../../src/metrics/interval';
import { MetricsRecorder, type RecorderParts } from '../../src/metrics/recorder';
import type { IntervalSink } from '../../src/metrics/sink';
import { FAKE_AWS_CREDENTIALS } from '../helpers/aws-endpoint';

/** config.properties lines on top of the defaults; Prometheus off unless asked for (it starts collectors). */
export function configWith(...lines: string[]): ServerConfig {
  return resolveConfig({
    fileText: ['metrics_prometheus=false', ...lines].join('\n'),
    configFile: 'metrics-test.properties',
    env: {},
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
}

/** A successful request that ran alone: 1000 µs in the model of 1500 µs in total, 200 µs queued. */
export function invoke(model: string, overrides: Partial<InvocationEvent> = {}): InvocationEvent {
  return { model, status: 200, totalMicros: 1500, modelMicros: 1000, queueMicros: 200, batchSize: 1, ...overrides };
}

/** What the server reports for one invoke of a model it knows: the cache lookup, then the answer. */
export function request(
  recorder: MetricsRecorder,
  model: string,
  hit = true,
  overrides: Partial<InvocationEvent> = {},
): void {
  recorder.cacheLookup(model, hit);
  recorder.invocation(invoke(model, overrides));
}

/** Sets fake static credentials for the AWS SDK's default chain for the enclosing describe. */
export function useFakeAwsCredentials(): void {
  const saved: Record<string, string | undefined> = {};
  const fake = { ...FAKE_AWS_CREDENTIALS, AWS_SESSION_TOKEN: undefined, AWS_PROFILE: undefined };
  before(() => {
    for (const [k, v] of Object.entries(fake)) {
      saved[k] = process.env[k];
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An interval sink that keeps what it gets. */
export class CapturingSink implements IntervalSink {
  readonly snapshots: Snapshot[] = [];
  dropped = 0;
  closed = false;
  constructor(readonly name = 'capture') {}
  write(snapshot: Snapshot): void {
    this.snapshots.push(snapshot);
  }
  async close(): Promise<void> {
    this.closed = true;
  }
  /** name → statistic set of the endpoint series (model null) of snapshot i. */
  stats(i: number): Record<string, { count: number; sum: number; min: number; max: number }> {
    return Object.fromEntries(
      this.snapshots[i].series
        .filter((s) => s.model === null)
        .map((s) => [s.def.name, { count: s.count, sum: s.sum, min: s.min, max: s.max }]),
    );
  }
}

/** A recorder with no system readings, a capturing sink and a clock that ticks 1 s per interval. */
export function recorder(parts: Partial<RecorderParts> = {}): {
  r: MetricsRecorder;
  sink: CapturingSink;
  log: string[];
} {
  const sink = new CapturingSink();
  const log: string[] = [];
  let t = 0;
  const r = new MetricsRecorder({
    intervalMs: 60_000,
    perModel: false,
    sinks: [sink],
    prometheus: null,
    sampleSystem: async () => [],
    log: (l) => log.push(l),
    now: () => ++t * 1000,
    ...parts,
  });
  return { r, sink, log };
}
