/** Configs and events for the metrics tests. */
import { resolveConfig } from '../../src/config/resolve';
import type { ServerConfig } from '../../src/config/types';
import type { InvocationEvent } from '../../src/metrics';

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
  return { model, status: 200, totalMicros: 1500, modelMicros: 1000, queueMicros: 200, batchSize: 1, cacheHit: true, ...overrides };
}

/** Sets fake static credentials for the AWS SDK's default chain for the enclosing describe. */
export function useFakeAwsCredentials(): void {
  const saved: Record<string, string | undefined> = {};
  const fake = { AWS_ACCESS_KEY_ID: 'AKIDMMETEST', AWS_SECRET_ACCESS_KEY: 'not-a-secret', AWS_SESSION_TOKEN: undefined, AWS_PROFILE: undefined };
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
