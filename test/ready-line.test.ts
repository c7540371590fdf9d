import assert from 'node:assert/strict';
import { resolveConfig } from '../src/config/resolve';
import { roundedMs } from '../src/logger';
import { readyLine } from '../src/ready-line';

function config(text: string) {
  return resolveConfig({
    fileText: text,
    configFile: '/etc/mme/config.properties',
    env: {},
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });
}

const figures = {
  elapsedMs: 1234.56,
  budgetBytes: 512 * 2 ** 20,
  loaded: 2,
  failed: [],
  modelLimits: 'per-model limits (memory_limit_mb, cpu_limit): cgroup v2',
};

describe('readyLine', () => {
  it('names nothing more when no token, TLS, tracing or repository is on', () => {
    const line = readyLine(config(''), figures);
    assert.match(
      line,
      /^ready in 1235 ms: self-managed cache \(model_cache on: .*512 MiB model memory budget\), worker_mode=dedicated, per-model limits \(memory_limit_mb, cpu_limit\): cgroup v2, 2 models loaded$/,
    );
  });

  it('names the tokens, TLS, tracing and the model repository when they are on', () => {
    const line = readyLine(
      config(
        [
          'inference_address=https://127.0.0.1:8080',
          'management_address=https://127.0.0.1:8080',
          'management_token=m-secret',
          'inference_token=a-secret,b-secret',
          'tls_cert_file=/etc/mme/tls/tls.crt',
          'tls_key_file=/etc/mme/tls/tls.key',
          'otel_traces_sampler_ratio=0.1',
          'otel_exporter_otlp_endpoint=http://collector:4318',
          'model_cache=on',
          'model_repository=s3://bucket/models',
        ].join('\n'),
      ),
      { ...figures, failed: ['broken'] },
    );
    assert.match(
      line,
      /, 2 models loaded, 1 failed \(broken: see their lines above\); on: management_token \(the management API needs it\), inference_token \(2 tokens: invokes need one\), TLS \(certificate \/etc\/mme\/tls\/tls\.crt\), tracing \(otel_traces_sampler_ratio=0\.1, to http:\/\/collector:4318\), model_repository s3:\/\/bucket\/models$/,
    );
    assert.doesNotMatch(line, /secret/, 'never a token itself');
  });
});

describe('roundedMs', () => {
  it('three significant figures below 100 ms, whole milliseconds above', () => {
    assert.equal(roundedMs(3.7411920000013197), '3.74 ms');
    assert.equal(roundedMs(42.149), '42.1 ms');
    assert.equal(roundedMs(1234.56), '1235 ms');
    assert.equal(roundedMs(0), '0 ms');
  });
});
