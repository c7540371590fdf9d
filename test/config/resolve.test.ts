import assert from 'node:assert/strict';
import { isMmeError } from '../../src/errors';
import type { CliArgs } from '../../src/config/cli';
import { resolveConfig, type Env, type ResolveInput } from '../../src/config/resolve';
import type { ServerConfig } from '../../src/config/types';

const kNoArgs: CliArgs = { command: null, mmsConfig: null, modelStore: null, models: null, help: false };

/** A machine without SageMaker's /opt/ml/models, where every other store the tests name exists. */
const kNoOptMl = (dir: string) => (dir === '/opt/ml/models' ? '/opt/ml/models does not exist' : null);

function resolve(
  fileText: string | null,
  env: Env = {},
  argv: Partial<CliArgs> = {},
  extra: Partial<ResolveInput> = {},
): ServerConfig {
  return resolveConfig({
    fileText,
    configFile: fileText === null ? null : '/etc/mme/config.properties',
    env,
    argv: { ...kNoArgs, ...argv },
    dirProblem: kNoOptMl,
    ...extra,
  });
}

/** Asserts an MME_ERR_CONFIG whose message matches every pattern. */
function assertConfigError(fn: () => unknown, ...patterns: (RegExp | string)[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isMmeError(err), `expected MmeError, got ${String(err)}`);
    assert.equal(err.code, 'MME_ERR_CONFIG');
    for (const p of patterns) {
      if (typeof p === 'string')
        assert.ok(err.message.includes(p), `message ${JSON.stringify(err.message)} lacks ${JSON.stringify(p)}`);
      else assert.match(err.message, p);
    }
    return true;
  });
}

const tcp = (raw: string, scheme: 'http' | 'https', host: string, port: number) => ({
  raw,
  scheme,
  host,
  port,
  path: '',
});

describe('resolveConfig', () => {
  describe('defaults', () => {
    it('gives every field its documented default when there is no file, env or flag', () => {
      assert.deepEqual(resolve(null), {
        configFile: null,
        inferenceAddress: tcp('http://127.0.0.1:8080', 'http', '127.0.0.1', 8080),
        managementAddress: tcp('http://127.0.0.1:8081', 'http', '127.0.0.1', 8081),
        sharedListener: false,
        modelStore: null,
        modelStoreNote:
          "no model store: model_store's default /opt/ml/models does not exist; models load by url through POST /models (mount a model folder there, or set model_store, to load them by name)",
        loadModels: [],
        defaultWorkersPerModel: 0,
        workersPerModel: 1,
        jobQueueSize: 100,
        preloadModel: false,
        responseTimeoutSeconds: 60,
        maxRequestTimeoutSeconds: 0,
        priorityLevels: 1,
        priorityAgingMs: 1000,
        modelLoadTimeoutSeconds: 120,
        unregisterModelTimeoutSeconds: 120,
        maxRequestSize: 6553500,
        maxResponseSize: 6553500,
        maxRequestElements: 8388608,
        decodeInputRequest: true,
        accessLog: false,
        logFormat: 'text',
        logLevel: 'info',
        maxStreamBuffer: 8388608,
        numberOfGpu: 0,
        metricTimeIntervalSeconds: 60,
        defaultBatchSize: 1,
        defaultMaxBatchDelayMs: 100,
        defaultServiceHandler: null,
        blacklistEnvVars: null,
        intraOpThreads: 1,
        interOpThreads: 1,
        graphOptimizationLevel: 'auto',
        modelCache: true,
        maxLoadedModels: 0,
        modelMemoryBudgetBytes: 0,
        modelMemoryReserveBytes: 512 * 2 ** 20,
        maxConcurrentLoads: 4,
        loadWaitTimeoutSeconds: 30,
        loadFailureCacheSeconds: 60,
        modelIdleUnloadSeconds: 0,
        evictionPolicy: 'gdsf',
        evictionDrainTimeoutSeconds: 10,
        shutdownTimeoutSeconds: 20,
        spareWorkers: 1,
        bodyHandoffBytes: 16 * 2 ** 20,
        bodyHandoffDir: null,
        bodyHandoffMinBytes: 65536,
        workerMode: 'dedicated',
        sharedWorkers: 1,
        maxModelsPerWorker: 0,
        sharedWorkerRecycleBytes: 256 * 2 ** 20,
        sharedHostHeavyShare: 0.5,
        autoscale: {
          queueWaitMs: 100,
          backlogPerWorker: 4,
          busyShare: 0.8,
          idleMs: 60_000,
          cooldownMs: 3000,
          cpuWorkers: 1,
        },
        modelRoots: ['/opt/ml/models'],
        managementToken: null,
        inferenceTokens: [],
        tls: null,
        maxConnections: 1024,
        grpcInferenceAddress: '127.0.0.1',
        grpcInferencePort: null,
        repository: null,
        multiModel: false,
        unknownKeys: [],
        metricsEndpointName: null,
        metricsVariantName: null,
        metricsPerModel: false,
        metricsNamespace: 'SageMakerMME',
        metricsCloudwatch: false,
        metricsCloudwatchRegion: null,
        metricsCloudwatchEndpoint: null,
        metricsCloudwatchMaxBuffered: 10000,
        metricsEmf: null,
        metricsMmsLog: null,
        metricsPrometheus: true,
        metricsAddress: null,
        otelTracesSamplerRatio: 0,
        otelExporterOtlpEndpoint: null,
      });
    });

    it('treats an empty file like no file, except for configFile', () => {
      const config = resolve('# nothing\n');
      assert.equal(config.configFile, '/etc/mme/config.properties');
      assert.deepEqual({ ...config, configFile: null }, resolve(null));
    });
  });

  describe('file values', () => {
    it('reads every key', () => {
      const config = resolve(
        [
          'inference_address=http://0.0.0.0:8080',
          'management_address=http://0.0.0.0:8080',
          'model_store=/data/models',
          'load_models=a=/m/a,b.tar.gz',
          'default_workers_per_model=2',
          'job_queue_size=7',
          'preload_model=true',
          'default_response_timeout_seconds=30',
          'model_load_timeout=300',
          'unregister_model_timeout=5.5',
          'max_request_size=1000',
          'max_response_size=2000',
          'max_request_elements=5000',
          'decode_input_request=false',
          'access_log=true',
          'log_format=JSON',
          'log_level=warn',
          'max_stream_buffer=1048576',
          'number_of_gpu=1',
          'metric_time_interval=10',
          'batch_size=8',
          'max_batch_delay=0',
          'default_service_handler=/code/handler.js',
          'blacklist_env_vars=AWS_.*',
          'onnx_intra_op_threads=4',
          'onnx_inter_op_threads=0',
          'onnx_graph_optimization_level=basic',
          'model_cache=off',
          'max_loaded_models=20',
          'model_memory_budget_mb=4096',
          'model_memory_reserve_mb=0',
          'max_concurrent_loads=2',
          'load_wait_timeout=0.5',
          'load_failure_cache_seconds=0',
          'model_idle_unload_seconds=0',
          'eviction_policy=LRU',
          'eviction_drain_timeout=3',
          'shutdown_timeout=25',
          'spare_workers=0',
          'body_handoff_bytes=0',
          'body_handoff_dir=/run/rings',
          'body_handoff_min_bytes=1024',
          'worker_mode=shared',
          'shared_workers=3',
          'max_models_per_worker=500',
          'shared_worker_recycle_mb=64',
          'shared_host_heavy_share=0.75',
          'model_roots=/a, /b',
          'management_token=s3cret',
          'max_connections=10',
          'grpc_inference_address=0.0.0.0',
          'grpc_inference_port=7070',
          'metrics_endpoint_name=ep',
          'metrics_variant_name=AllTraffic',
          'metrics_per_model_dimension=true',
          'metrics_namespace=Team/MME',
          'metrics_cloudwatch=true',
          'metrics_cloudwatch_region=eu-west-1',
          'metrics_cloudwatch_endpoint=http://127.0.0.1:4566',
          'metrics_cloudwatch_max_buffered=50',
          'metrics_emf=STDOUT',
          'metrics_mms_log=/var/log/mms_metrics.log',
          'metrics_prometheus=false',
          'metrics_address=http://0.0.0.0:9100',
          'otel_traces_sampler_ratio=0.25',
          'otel_exporter_otlp_endpoint=http://collector:4318',
        ].join('\n'),
      );
      const { blacklistEnvVars, ...rest } = config;
      assert.deepEqual(rest, {
        configFile: '/etc/mme/config.properties',
        inferenceAddress: tcp('http://0.0.0.0:8080', 'http', '0.0.0.0', 8080),
        managementAddress: tcp('http://0.0.0.0:8080', 'http', '0.0.0.0', 8080),
        sharedListener: true,
        modelStore: '/data/models',
        modelStoreNote: 'model store /data/models: models are looked up there by name; POST /models also loads a url',
        loadModels: [
          { name: 'a', url: '/m/a' },
          { name: 'b', url: 'b.tar.gz' },
        ],
        defaultWorkersPerModel: 2,
        workersPerModel: 2,
        jobQueueSize: 7,
        preloadModel: true,
        responseTimeoutSeconds: 30,
        maxRequestTimeoutSeconds: 0,
        priorityLevels: 1,
        priorityAgingMs: 1000,
        modelLoadTimeoutSeconds: 300,
        unregisterModelTimeoutSeconds: 5.5,
        maxRequestSize: 1000,
        maxResponseSize: 2000,
        maxRequestElements: 5000,
        decodeInputRequest: false,
        accessLog: true,
        logFormat: 'json',
        logLevel: 'warn',
        maxStreamBuffer: 1048576,
        numberOfGpu: 1,
        metricTimeIntervalSeconds: 10,
        defaultBatchSize: 8,
        defaultMaxBatchDelayMs: 0,
        defaultServiceHandler: '/code/handler.js',
        intraOpThreads: 4,
        interOpThreads: 0,
        graphOptimizationLevel: 'basic',
        modelCache: false,
        maxLoadedModels: 20,
        modelMemoryBudgetBytes: 4096 * 2 ** 20,
        modelMemoryReserveBytes: 0,
        maxConcurrentLoads: 2,
        loadWaitTimeoutSeconds: 0.5,
        loadFailureCacheSeconds: 0,
        modelIdleUnloadSeconds: 0,
        evictionPolicy: 'lru',
        evictionDrainTimeoutSeconds: 3,
        shutdownTimeoutSeconds: 25,
        spareWorkers: 0,
        bodyHandoffBytes: 0,
        bodyHandoffDir: '/run/rings',
        bodyHandoffMinBytes: 1024,
        workerMode: 'shared',
        sharedWorkers: 3,
        maxModelsPerWorker: 500,
        sharedWorkerRecycleBytes: 64 * 2 ** 20,
        sharedHostHeavyShare: 0.75,
        autoscale: {
          queueWaitMs: 100,
          backlogPerWorker: 4,
          busyShare: 0.8,
          idleMs: 60_000,
          cooldownMs: 3000,
          cpuWorkers: 0,
        },
        modelRoots: ['/a', '/b'],
        managementToken: 's3cret',
        inferenceTokens: [],
        tls: null,
        maxConnections: 10,
        grpcInferenceAddress: '0.0.0.0',
        grpcInferencePort: 7070,
        repository: null,
        multiModel: false,
        unknownKeys: [],
        metricsEndpointName: 'ep',
        metricsVariantName: 'AllTraffic',
        metricsPerModel: true,
        metricsNamespace: 'Team/MME',
        metricsCloudwatch: true,
        metricsCloudwatchRegion: 'eu-west-1',
        metricsCloudwatchEndpoint: 'http://127.0.0.1:4566',
        metricsCloudwatchMaxBuffered: 50,
        metricsEmf: 'stdout',
        metricsMmsLog: '/var/log/mms_metrics.log',
        metricsPrometheus: false,
        metricsAddress: tcp('http://0.0.0.0:9100', 'http', '0.0.0.0', 9100),
        otelTracesSamplerRatio: 0.25,
        otelExporterOtlpEndpoint: 'http://collector:4318',
      });
      assert.ok(blacklistEnvVars);
    });

    it('turns the model cache off by default in SageMaker MME mode only, and validates its values', () => {
      assert.equal(resolve(null, { SAGEMAKER_MULTI_MODEL: 'true' }).modelCache, false);
      assert.equal(resolve('model_cache=on', { SAGEMAKER_MULTI_MODEL: 'true' }).modelCache, true);
      assert.throws(
        () => resolve('model_cache=maybe'),
        /model_cache: "maybe" is not one of the allowed values \(expected auto, on, off/,
      );
      assert.throws(() => resolve('eviction_policy=fifo'), /eviction_policy: "fifo"/);
    });

    it('ignores whitespace around values', () => {
      const config = resolve('job_queue_size = 100  \npreload_model=  TRUE\t\nmodel_store=  /m  ');
      assert.equal(config.jobQueueSize, 100);
      assert.equal(config.preloadModel, true);
      assert.equal(config.modelStore, '/m');
    });

    it('treats empty optional values as unset', () => {
      const config = resolve('model_store=\nload_models=\ndefault_service_handler=\nblacklist_env_vars=');
      assert.equal(config.modelStore, null);
      assert.deepEqual(config.loadModels, []);
      assert.equal(config.defaultServiceHandler, null);
      assert.equal(config.blacklistEnvVars, null);
    });

    it('with allow_unknown_keys=true, collects unknown keys in file order without failing (MMS files carry keys of other servers)', () => {
      const config = resolve(
        'async_logging=true\njob_queue_size=5\nvmargs=-Xmx1g\nnumber_of_netty_threads=4\nallow_unknown_keys=true',
      );
      assert.deepEqual(config.unknownKeys, ['async_logging', 'vmargs', 'number_of_netty_threads']);
      assert.equal(config.jobQueueSize, 5);
    });
  });

  describe('invalid values', () => {
    it('names key, value and expectation for a non-integer', () => {
      assertConfigError(
        () => resolve('job_queue_size=abc'),
        'config key job_queue_size: "abc" is not an integer (expected a whole number >= 1, e.g. job_queue_size=100); set in /etc/mme/config.properties',
      );
    });

    const cases: [string, RegExp][] = [
      ['job_queue_size=0', /job_queue_size: "0" is out of range \(expected a whole number >= 1/],
      [
        'default_workers_per_model=-1',
        /default_workers_per_model: "-1" is out of range \(expected a whole number >= 0/,
      ],
      ['batch_size=1.5', /batch_size: "1.5" is not an integer/],
      ['max_request_size=99999999999999999999', /max_request_size: "99999999999999999999" is too large/],
      [
        'max_response_size=1073741825',
        /max_response_size: "1073741825" is out of range \(expected a whole number 1 to 1073741824 \(1 GiB\)/,
      ],
      ['max_batch_delay=', /max_batch_delay: "" is not an integer/],
      ['metric_time_interval=0x10', /metric_time_interval: "0x10" is not an integer/],
      [
        'model_load_timeout=0',
        /model_load_timeout: "0" is out of range \(expected a number > 0 and <= 2147483 seconds \(about 24\.8 days, the longest a timer can wait\), e.g. model_load_timeout=120\)/,
      ],
      ['unregister_model_timeout=soon', /unregister_model_timeout: "soon" is not a number/],
      ['default_response_timeout=0', /default_response_timeout: "0" is out of range/],
      [
        'grpc_inference_port=70000',
        /grpc_inference_port: "70000" is out of range \(expected a whole number 0 to 65535, e.g. grpc_inference_port=7070\)/,
      ],
      [
        'default_response_timeout_seconds=0',
        /default_response_timeout_seconds: "0" is out of range \(expected a number > 0 and <= 2147483 seconds \(about 24\.8 days, the longest a timer can wait\), or negative for unset, e.g. default_response_timeout_seconds=60\)/,
      ],
      [
        'preload_model=yes',
        /preload_model: "yes" is not a boolean \(expected true or false, e.g. preload_model=false\)/,
      ],
      ['decode_input_request=1', /decode_input_request: "1" is not a boolean/],
      ['enable_envvars_config=on', /enable_envvars_config: "on" is not a boolean/],
      [
        'inference_address=ftp://x:1',
        /inference_address: "ftp:\/\/x:1" is not a valid address: not of the form http:\/\/host:port, https:\/\/host\[:port\] or unix:\/path/,
      ],
      [
        'management_address=http://h:70000',
        /management_address: "http:\/\/h:70000" is not a valid address: port 70000 is above 65535/,
      ],
      ['inference_address=http://:8080', /inference_address: "http:\/\/:8080" is not a valid address/],
      ['inference_address=http://h:8080/api', /inference_address: .* is not a valid address/],
      ['inference_address=127.0.0.1:8080', /inference_address: .* is not a valid address/],
      [
        'blacklist_env_vars=(AWS',
        /blacklist_env_vars: "\(AWS" is not a valid regular expression: .*e\.g\. blacklist_env_vars=AWS_\.\*/,
      ],
      ['load_models==/m', /load_models: "=\/m" is not a valid model list: "=\/m" has an empty model name/],
      ['load_models=a=', /load_models: "a=" is not a valid model list: "a=" has an empty url/],
      ['load_models=/', /cannot derive a model name from "\/"; write name=\//],
      ['load_models=a=/x,/y/a', /model name "a" appears twice/],
    ];
    for (const [line, pattern] of cases) {
      it(`rejects ${line}`, () => assertConfigError(() => resolve(line), pattern, /^config key /));
    }

    it('says when a bad value came from an MMS_<KEY> environment variable', () => {
      assertConfigError(
        () => resolve('enable_envvars_config=true', { MMS_JOB_QUEUE_SIZE: 'many' }),
        'config key job_queue_size: "many" is not an integer',
        '; set by environment variable MMS_JOB_QUEUE_SIZE',
      );
    });

    it('validates values that are overridden later only after the override', () => {
      const config = resolve('job_queue_size=abc\nenable_envvars_config=true', { MMS_JOB_QUEUE_SIZE: '3' });
      assert.equal(config.jobQueueSize, 3);
    });
  });

  describe('$$VAR$$ substitution', () => {
    it('replaces every placeholder in every value from the environment', () => {
      const config = resolve(
        'inference_address=http://$$HOST_X$$:$$PORT_X$$\nmodel_store=$$STORE$$/models\nvmargs=$$VM$$\nallow_unknown_keys=true',
        { HOST_X: '0.0.0.0', PORT_X: '9090', STORE: '/data', VM: '-Xmx1g' },
      );
      assert.deepEqual(config.inferenceAddress, tcp('http://0.0.0.0:9090', 'http', '0.0.0.0', 9090));
      assert.equal(config.modelStore, '/data/models');
    });

    it('inserts the value literally, even with $ or backslashes in it', () => {
      assert.equal(
        resolve('default_service_handler=$$HANDLER$$', { HANDLER: '/a$1\\b$$' }).defaultServiceHandler,
        '/a$1\\b$$',
      );
    });

    it("leaves one-character names alone, as MMS's pattern requires two", () => {
      assert.equal(resolve('model_store=/m/$$A$$').modelStore, '/m/$$A$$');
    });

    it('substitutes an empty variable as empty', () => {
      assert.equal(resolve('model_store=$$EMPTY_VAR$$', { EMPTY_VAR: '' }).modelStore, null);
    });

    it('fails naming the key and the missing variable', () => {
      assertConfigError(
        () => resolve('inference_address=http://0.0.0.0:$$SAGEMAKER_BIND_TO_PORT$$'),
        'config key inference_address uses $$SAGEMAKER_BIND_TO_PORT$$ but environment variable SAGEMAKER_BIND_TO_PORT is not set',
      );
    });

    it('fails for a missing variable in an unknown key too (MMS substitutes every value)', () => {
      assertConfigError(() => resolve('vmargs=$$VMARGS$$'), 'config key vmargs uses $$VMARGS$$');
    });

    it('does not substitute values from the command line or MMS_<KEY> variables', () => {
      const config = resolve(
        'enable_envvars_config=true',
        { MMS_DEFAULT_SERVICE_HANDLER: '$$NOPE$$' },
        { modelStore: '$$NOPE$$' },
      );
      assert.equal(config.defaultServiceHandler, '$$NOPE$$');
      assert.equal(config.modelStore, '$$NOPE$$');
    });
  });

  describe('command line', () => {
    it('--model-store overrides model_store and --models overrides load_models', () => {
      const config = resolve(
        'model_store=/file\nload_models=file=/f',
        {},
        { modelStore: '/cli', models: ['a=/a', 'b=/b'] },
      );
      assert.equal(config.modelStore, '/cli');
      assert.deepEqual(config.loadModels, [
        { name: 'a', url: '/a' },
        { name: 'b', url: '/b' },
      ]);
    });

    it('reports a bad --models value as coming from the flag', () => {
      assertConfigError(() => resolve(null, {}, { models: ['=x'] }), 'config key load_models', 'set by --models');
    });
  });

  describe('enable_envvars_config', () => {
    it('ignores MMS_<KEY> variables unless the file enables them', () => {
      assert.equal(resolve('job_queue_size=5', { MMS_JOB_QUEUE_SIZE: '9' }).jobQueueSize, 5);
      assert.equal(resolve('enable_envvars_config=false', { MMS_JOB_QUEUE_SIZE: '9' }).jobQueueSize, 100);
    });

    it('lets MMS_<KEY> override the file and the command line (env > CLI > file)', () => {
      const env = { MMS_MODEL_STORE: '/env', MMS_JOB_QUEUE_SIZE: '9', MMS_INFERENCE_ADDRESS: 'http://0.0.0.0:1234' };
      const config = resolve('enable_envvars_config=True\nmodel_store=/file\njob_queue_size=5', env, {
        modelStore: '/cli',
      });
      assert.equal(config.modelStore, '/env');
      assert.equal(config.jobQueueSize, 9);
      assert.equal(config.inferenceAddress.port, 1234);
    });

    it('covers every key, including ones MMS never exposed', () => {
      const config = resolve('enable_envvars_config=true', {
        MMS_ONNX_INTRA_OP_THREADS: '3',
        MMS_DEFAULT_RESPONSE_TIMEOUT_SECONDS: '10',
      });
      assert.equal(config.intraOpThreads, 3);
      assert.equal(config.responseTimeoutSeconds, 10);
    });

    it('cannot be switched on by the environment itself (MMS reads it from the file only)', () => {
      assert.equal(resolve(null, { MMS_ENABLE_ENVVARS_CONFIG: 'true', MMS_JOB_QUEUE_SIZE: '9' }).jobQueueSize, 100);
    });
  });

  describe('deployment placeholders', () => {
    it('refuses any environment variable still holding SET-YOUR-…, naming each and where to set it', () => {
      assertConfigError(
        () => resolve(null, { PATH: '/usr/bin', AWS_ROLE_ARN: 'SET-YOUR-ROLE-ARN', MMS_X: 's3://SET-YOUR-BUCKET/m' }),
        'environment variable AWS_ROLE_ARN="SET-YOUR-ROLE-ARN", MMS_X="s3://SET-YOUR-BUCKET/m" still holds a placeholder',
        'deploy/k8s/settings.env',
      );
    });

    it('lets values that only resemble one through', () => {
      assert.equal(resolve(null, { AWS_ROLE_ARN: 'arn:aws:iam::1:role/set-your-own' }).inferenceAddress.port, 8080);
    });
  });

  describe('response timeout', () => {
    it("is 60 s (SageMaker's invoke limit) when neither key is written", () => {
      assert.equal(resolve(null).responseTimeoutSeconds, 60);
    });

    it('reads default_response_timeout as MINUTES, as MMS does', () => {
      assert.equal(resolve('default_response_timeout=2').responseTimeoutSeconds, 120);
      assert.equal(resolve('default_response_timeout=120').responseTimeoutSeconds, 7200);
    });

    it('prefers default_response_timeout_seconds over the minutes key', () => {
      assert.equal(
        resolve('default_response_timeout=2\ndefault_response_timeout_seconds=30').responseTimeoutSeconds,
        30,
      );
      assert.equal(resolve('default_response_timeout_seconds=0.25').responseTimeoutSeconds, 0.25);
    });

    it("treats a negative default_response_timeout_seconds as unset (MMS's -1)", () => {
      assert.equal(
        resolve('default_response_timeout=2\ndefault_response_timeout_seconds=-1').responseTimeoutSeconds,
        120,
      );
      assert.equal(resolve('default_response_timeout_seconds=-1').responseTimeoutSeconds, 60);
    });

    it('applies the minutes key when it comes from MMS_DEFAULT_RESPONSE_TIMEOUT', () => {
      assert.equal(
        resolve('enable_envvars_config=true', { MMS_DEFAULT_RESPONSE_TIMEOUT: '1' }).responseTimeoutSeconds,
        60,
      );
      assert.equal(
        resolve('enable_envvars_config=true', { MMS_DEFAULT_RESPONSE_TIMEOUT: '3' }).responseTimeoutSeconds,
        180,
      );
    });
  });

  describe('addresses', () => {
    it('parses http, https (443 by default), http without port (80), IPv6 and unix', () => {
      // An https:// address needs a certificate (resolving reads no file).
      const tls = 'tls_cert_file=/tls/c.crt\ntls_key_file=/tls/c.key';
      const parse = (address: string) =>
        resolve(`inference_address=${address}${/^https/i.test(address) ? `\n${tls}` : ''}`).inferenceAddress;
      assert.deepEqual(parse('https://example.com'), tcp('https://example.com', 'https', 'example.com', 443));
      assert.deepEqual(parse('HTTPS://h:8443/'), tcp('HTTPS://h:8443/', 'https', 'h', 8443));
      assert.deepEqual(parse('http://localhost'), tcp('http://localhost', 'http', 'localhost', 80));
      assert.deepEqual(parse('http://[::1]:8080'), tcp('http://[::1]:8080', 'http', '::1', 8080));
      assert.deepEqual(parse('http://127.0.0.1:0'), tcp('http://127.0.0.1:0', 'http', '127.0.0.1', 0));
      assert.deepEqual(parse('unix:/tmp/mme.sock'), {
        raw: 'unix:/tmp/mme.sock',
        scheme: 'unix',
        host: '',
        port: 0,
        path: '/tmp/mme.sock',
      });
    });

    it('TLS: the files go together, https:// needs them, and with them inference_address must be https://', () => {
      const tls = 'tls_cert_file=/tls/c.crt\ntls_key_file=/tls/c.key';
      assert.deepEqual(resolve(`inference_address=https://0.0.0.0:8443\n${tls}\ntls_client_ca_file=/tls/ca.crt`).tls, {
        certFile: '/tls/c.crt',
        keyFile: '/tls/c.key',
        clientCaFile: '/tls/ca.crt',
      });
      // management_address and metrics_address may stay plain (loopback), a unix socket too.
      const mixed = resolve(`inference_address=https://0.0.0.0:8443\nmetrics_address=http://127.0.0.1:9100\n${tls}`);
      assert.equal(mixed.managementAddress.scheme, 'http');
      assert.equal(resolve(`inference_address=unix:/s\n${tls}`).tls?.certFile, '/tls/c.crt');
      assertConfigError(() => resolve('tls_key_file=/tls/c.key'), 'go together', 'only tls_key_file is set');
      assertConfigError(() => resolve('tls_client_ca_file=/tls/ca.crt'), 'go together');
      assertConfigError(
        () => resolve('management_address=https://127.0.0.1:8443'),
        'management_address https://127.0.0.1:8443 is https:// but no certificate',
      );
      assertConfigError(
        () => resolve(tls),
        'inference_address http://127.0.0.1:8080 is http://',
        'write https://127.0.0.1:8080',
      );
    });

    it('shares one listener when both addresses are the same', () => {
      assert.equal(
        resolve('inference_address=http://0.0.0.0:8080\nmanagement_address=http://0.0.0.0:8080').sharedListener,
        true,
      );
      assert.equal(
        resolve('inference_address=http://LOCALHOST:0\nmanagement_address=http://localhost:0').sharedListener,
        true,
      );
      assert.equal(resolve('inference_address=unix:/s\nmanagement_address=unix:/s').sharedListener, true);
    });

    it('rejects two different listeners on one fixed port', () => {
      assertConfigError(
        () => resolve('inference_address=http://0.0.0.0:8080\nmanagement_address=http://127.0.0.1:8080'),
        'inference_address http://0.0.0.0:8080 and management_address http://127.0.0.1:8080 use the same port',
      );
      assertConfigError(
        () => resolve('inference_address=http://h:8080\nmanagement_address=https://h:8080'),
        'use the same port',
      );
    });

    it('allows different hosts on the ephemeral port 0', () => {
      assert.equal(
        resolve('inference_address=http://127.0.0.1:0\nmanagement_address=http://0.0.0.0:0').sharedListener,
        false,
      );
    });
  });

  describe('load_models', () => {
    it('accepts ALL in any case when model_store is set', () => {
      assert.equal(resolve('load_models=all\nmodel_store=/m').loadModels, 'ALL');
      assert.equal(resolve(null, {}, { models: ['ALL'], modelStore: '/m' }).loadModels, 'ALL');
    });

    it('rejects ALL without model_store', () => {
      assertConfigError(
        () => resolve('load_models=ALL\nmodel_store='),
        'config key load_models is ALL but model_store is not set',
      );
      assertConfigError(
        () => resolve('load_models=ALL'),
        "config key load_models is ALL but model_store's default /opt/ml/models does not exist",
      );
    });
  });

  describe('model_store', () => {
    const note = (config: ServerConfig) => config.modelStoreNote;

    it('starts without a store when the default /opt/ml/models is missing, and says where models come from', () => {
      for (const env of [{}, { SAGEMAKER_MULTI_MODEL: 'true' }, { SAGEMAKER_BIND_TO_PORT: '9090' }]) {
        const config = resolve(null, env);
        assert.equal(config.modelStore, null);
        assert.match(
          note(config),
          /^no model store: model_store's default \/opt\/ml\/models does not exist; models load by url through POST \/models/,
        );
      }
    });

    it('uses the default /opt/ml/models where it exists', () => {
      const config = resolve(null, {}, {}, { dirProblem: () => null });
      assert.equal(config.modelStore, '/opt/ml/models');
      assert.match(note(config), /^model store \/opt\/ml\/models: models are looked up there by name/);
    });

    it('refuses a store the file, MMS_MODEL_STORE or --model-store names when it is missing, even /opt/ml/models', () => {
      const missing = (dir: string) => `${dir} does not exist`;
      const refused = 'config key model_store: /opt/ml/models does not exist; create it, or point model_store';
      assertConfigError(() => resolve('model_store=/opt/ml/models', {}, {}, { dirProblem: missing }), refused);
      assertConfigError(
        () => resolve('enable_envvars_config=true', { MMS_MODEL_STORE: '/opt/ml/models' }, {}, { dirProblem: missing }),
        refused,
      );
      assertConfigError(() => resolve(null, {}, { modelStore: '/opt/ml/models' }, { dirProblem: missing }), refused);
    });

    it('does not check a named store under SAGEMAKER_MULTI_MODEL, where the platform owns it', () => {
      const config = resolve(
        'model_store=/sm',
        { SAGEMAKER_MULTI_MODEL: 'true' },
        {},
        { dirProblem: (d) => `${d} does not exist` },
      );
      assert.equal(config.modelStore, '/sm');
    });

    it('has no store when model_store is written empty, and says so', () => {
      const config = resolve('model_store=', {}, {}, { dirProblem: () => null });
      assert.equal(config.modelStore, null);
      assert.equal(note(config), 'no model store (model_store is empty): models load by url through POST /models');
    });

    it('derives names from the url when none is given', () => {
      const config = resolve(
        'load_models=/opt/ml/models/resnet/, s3://bucket/k/bert.tar.gz ,x.TGZ,,named=/m/other.tar.gz,https://h/m.tar.gz?sig=a=b,/d/what?',
      );
      assert.deepEqual(config.loadModels, [
        { name: 'resnet', url: '/opt/ml/models/resnet/' },
        { name: 'bert', url: 's3://bucket/k/bert.tar.gz' },
        { name: 'x', url: 'x.TGZ' },
        { name: 'named', url: '/m/other.tar.gz' },
        { name: 'm', url: 'https://h/m.tar.gz?sig=a=b' },
        { name: 'what?', url: '/d/what?' },
      ]);
    });
  });

  describe('blacklist_env_vars', () => {
    it("matches whole variable names only, as Java's Matcher.matches()", () => {
      const re = resolve('blacklist_env_vars=AWS_.*|SECRET').blacklistEnvVars!;
      assert.equal(re.test('AWS_SECRET_ACCESS_KEY'), true);
      assert.equal(re.test('SECRET'), true);
      assert.equal(re.test('MY_AWS_KEY'), false);
      assert.equal(re.test('SECRET_2'), false);
    });
  });

  describe('workers per model', () => {
    it('resolves 0 to the GPU count, else the CPU count, as MMS', () => {
      assert.equal(resolve(null, {}, {}, { cpuCount: 8 }).workersPerModel, 8);
      assert.equal(resolve('number_of_gpu=2', {}, {}, { cpuCount: 8 }).workersPerModel, 2);
      const explicit = resolve('default_workers_per_model=3\nnumber_of_gpu=2', {}, {}, { cpuCount: 8 });
      assert.equal(explicit.workersPerModel, 3);
      assert.equal(explicit.defaultWorkersPerModel, 3);
    });
  });

  describe('SageMaker environment', () => {
    it('SAGEMAKER_BIND_TO_PORT replaces the port of both addresses and keeps their hosts', () => {
      const config = resolve('inference_address=http://[::1]:8080\nmanagement_address=http://[::1]:8081', {
        SAGEMAKER_BIND_TO_PORT: '9000',
      });
      assert.deepEqual(config.inferenceAddress, tcp('http://[::1]:9000', 'http', '::1', 9000));
      assert.deepEqual(config.managementAddress, tcp('http://[::1]:9000', 'http', '::1', 9000));
      assert.equal(config.sharedListener, true);
    });

    it('SAGEMAKER_BIND_TO_PORT with two different hosts is a port clash', () => {
      assertConfigError(
        () => resolve('inference_address=http://0.0.0.0:8080', { SAGEMAKER_BIND_TO_PORT: '9000' }),
        'inference_address http://0.0.0.0:9000 and management_address http://127.0.0.1:9000 use the same port',
      );
    });

    it('SAGEMAKER_BIND_TO_PORT makes the default addresses one shared listener', () => {
      const config = resolve(null, { SAGEMAKER_BIND_TO_PORT: '9000' });
      assert.equal(config.sharedListener, true);
      assert.equal(config.inferenceAddress.port, 9000);
    });

    it('SAGEMAKER_BIND_TO_PORT wins over MMS_INFERENCE_ADDRESS and leaves a unix management socket alone', () => {
      const config = resolve('enable_envvars_config=true\nmanagement_address=unix:/tmp/m.sock', {
        MMS_INFERENCE_ADDRESS: 'http://0.0.0.0:1',
        SAGEMAKER_BIND_TO_PORT: '8085',
      });
      assert.equal(config.inferenceAddress.raw, 'http://0.0.0.0:8085');
      assert.equal(config.managementAddress.path, '/tmp/m.sock');
    });

    for (const bad of ['abc', '0', '65536', '80.5', '-1']) {
      it(`rejects SAGEMAKER_BIND_TO_PORT=${bad}`, () => {
        assertConfigError(
          () => resolve(null, { SAGEMAKER_BIND_TO_PORT: bad }),
          new RegExp(
            `^environment variable SAGEMAKER_BIND_TO_PORT: "${bad}" is (not an integer|out of range) \\(expected a whole number 1-65535, e\\.g\\. SAGEMAKER_BIND_TO_PORT=8080\\)$`,
          ),
        );
      });
    }

    it('rejects SAGEMAKER_BIND_TO_PORT with a unix inference_address', () => {
      assertConfigError(
        () => resolve('inference_address=unix:/tmp/i.sock', { SAGEMAKER_BIND_TO_PORT: '8080' }),
        'is a unix socket',
      );
    });

    it('autoscale=auto is off under SAGEMAKER_MULTI_MODEL=true (the platform scales) and on elsewhere; on/off override', () => {
      assert.equal(resolve(null, { SAGEMAKER_MULTI_MODEL: 'true' }).autoscale, null);
      assert.equal(resolve(null).autoscale?.queueWaitMs, 100);
      assert.equal(resolve('autoscale=off').autoscale, null);
      assert.deepEqual(
        resolve('autoscale=on\nautoscale_queue_wait_ms=20\nautoscale_idle_seconds=5', { SAGEMAKER_MULTI_MODEL: 'true' })
          .autoscale,
        { queueWaitMs: 20, backlogPerWorker: 4, busyShare: 0.8, idleMs: 5000, cooldownMs: 3000, cpuWorkers: 1 },
      );
      assert.throws(() => resolve('autoscale=maybe'), /autoscale/);
    });

    it("autoscale's worker limit is the cores over each worker's onnxruntime threads; autoscale_cores overrides the cores, and a GPU instance has none", () => {
      const limit = (text: string | null, cpuCount: number) =>
        resolve(text, {}, {}, { cpuCount }).autoscale?.cpuWorkers;
      assert.equal(limit(null, 8), 8);
      assert.equal(limit('onnx_intra_op_threads=2', 8), 4);
      assert.equal(limit('onnx_intra_op_threads=3', 8), 2);
      assert.equal(limit('onnx_intra_op_threads=0', 8), 1, "onnxruntime's default: one thread per core");
      assert.equal(limit('onnx_intra_op_threads=4', 2), 1, 'never under one');
      assert.equal(limit('autoscale_cores=32', 8), 32, 'raised for handlers that wait on I/O');
      assert.equal(limit('number_of_gpu=1', 8), 0);
    });

    it("onnx_graph_optimization_level takes one of onnxruntime's four levels and refuses anything else, naming them", () => {
      assert.equal(resolve('onnx_graph_optimization_level=extended').graphOptimizationLevel, 'extended');
      assert.throws(
        () => resolve('onnx_graph_optimization_level=fast'),
        (err: Error) =>
          /onnx_graph_optimization_level/.test(err.message) &&
          /all, extended, basic, disabled|all\|extended/.test(err.message),
      );
    });

    it('SAGEMAKER_MULTI_MODEL=true sets multiModel (case-insensitively)', () => {
      assert.equal(resolve(null, { SAGEMAKER_MULTI_MODEL: 'true' }).multiModel, true);
      assert.equal(resolve(null, { SAGEMAKER_MULTI_MODEL: 'TRUE' }).multiModel, true);
      assert.equal(resolve(null, { SAGEMAKER_MULTI_MODEL: 'false' }).multiModel, false);
      assert.equal(resolve(null, { SAGEMAKER_MULTI_MODEL: '' }).multiModel, false);
      assertConfigError(
        () => resolve(null, { SAGEMAKER_MULTI_MODEL: 'yes' }),
        'environment variable SAGEMAKER_MULTI_MODEL: "yes" is not a boolean',
      );
    });

    it('inference_token: a comma list of tokens; refused in SageMaker mode without quoting the token', () => {
      assert.deepEqual(resolve('inference_token=new-one, old-one').inferenceTokens, ['new-one', 'old-one']);
      assert.deepEqual(resolve(null).inferenceTokens, []);
      for (const bad of ['a,,b', 'a,', 'two words'])
        assertConfigError(
          () => resolve(`inference_token=${bad}`),
          'inference_token has an empty token or one with a space',
        );
      assert.throws(
        () => resolve('inference_token=s3cret-value', { SAGEMAKER_MULTI_MODEL: 'true' }),
        (err: Error) =>
          /inference_token is set .*SAGEMAKER_MULTI_MODEL=true/.test(err.message) &&
          !err.message.includes('s3cret-value'),
      );
    });

    it('SAGEMAKER_MAX_PAYLOAD_IN_MB sets max_request_size in MiB, over the file', () => {
      assert.equal(
        resolve('max_request_size=10', { SAGEMAKER_MAX_PAYLOAD_IN_MB: '6' }).maxRequestSize,
        6 * 1024 * 1024,
      );
      assert.equal(resolve(null, { SAGEMAKER_MAX_PAYLOAD_IN_MB: '0.5' }).maxRequestSize, 524288);
      assert.equal(resolve(null, { SAGEMAKER_MAX_PAYLOAD_IN_MB: '6' }).maxResponseSize, 6553500);
      for (const bad of ['six', '0', '-1', '1025']) {
        assertConfigError(
          () => resolve(null, { SAGEMAKER_MAX_PAYLOAD_IN_MB: bad }),
          `environment variable SAGEMAKER_MAX_PAYLOAD_IN_MB: "${bad}"`,
        );
      }
    });
  });

  describe('metrics keys', () => {
    it('reads off and empty as off for the log sinks', () => {
      assert.equal(resolve('metrics_emf=Off').metricsEmf, null);
      assert.equal(resolve('metrics_mms_log=').metricsMmsLog, null);
      assert.equal(resolve('metrics_emf=./emf.log').metricsEmf, './emf.log');
    });

    it('takes the endpoint and variant names from $$VAR$$, since SageMaker does not pass them', () => {
      const config = resolve('metrics_endpoint_name=$$ENDPOINT_NAME$$', { ENDPOINT_NAME: 'prod-mme' });
      assert.equal(config.metricsEndpointName, 'prod-mme');
    });

    it('rejects a namespace CloudWatch would refuse', () => {
      assertConfigError(
        () => resolve('metrics_namespace=AWS/SageMaker'),
        'config key metrics_namespace: "AWS/SageMaker" is not a namespace CloudWatch accepts',
        'not starting with AWS/',
      );
      assertConfigError(() => resolve('metrics_namespace=a,b'), 'metrics_namespace: "a,b"');
    });

    it('rejects a CloudWatch endpoint that is not an http(s) URL', () => {
      assertConfigError(
        () => resolve('metrics_cloudwatch_endpoint=monitoring.us-east-1.amazonaws.com'),
        'metrics_cloudwatch_endpoint: "monitoring.us-east-1.amazonaws.com" is not an http(s) URL',
      );
    });

    it('rejects an OTLP endpoint that is not an http(s) URL, and a sampler ratio outside 0 to 1', () => {
      assertConfigError(
        () => resolve('otel_exporter_otlp_endpoint=collector:4318'),
        'otel_exporter_otlp_endpoint: "collector:4318" is not an http(s) URL',
        'otel_exporter_otlp_endpoint=http://otel-collector:4318',
      );
      assertConfigError(() => resolve('otel_traces_sampler_ratio=2'), 'otel_traces_sampler_ratio', '0 to 1');
    });

    it('serves /metrics on the management listener unless metrics_address names another one', () => {
      assert.equal(
        resolve('metrics_address=http://127.0.0.1:8081').metricsAddress,
        null,
        'the management address written out',
      );
      assert.equal(resolve('metrics_address=unix:/tmp/metrics.sock').metricsAddress?.path, '/tmp/metrics.sock');
      assertConfigError(
        () => resolve('metrics_address=http://127.0.0.1:8080'),
        'metrics_address: "http://127.0.0.1:8080" collides with inference_address or management_address',
      );
      assertConfigError(() => resolve('metrics_address=http://0.0.0.0:8081'), 'collides');
      assertConfigError(() => resolve('metrics_address=9100'), 'metrics_address: "9100" is not a valid address');
    });
  });

  describe('result', () => {
    it('is deeply frozen', () => {
      const config = resolve('load_models=a=/a\nblacklist_env_vars=X.*\nasync_logging=true\nallow_unknown_keys=true');
      const unfrozen: string[] = [];
      const visit = (value: unknown, where: string): void => {
        if (typeof value !== 'object' || value === null) return;
        if (!Object.isFrozen(value)) unfrozen.push(where);
        for (const [k, v] of Object.entries(value)) visit(v, `${where}.${k}`);
      };
      visit(config, 'config');
      assert.deepEqual(unfrozen, []);
      assert.throws(() => {
        (config as { jobQueueSize: number }).jobQueueSize = 1;
      }, TypeError);
      assert.throws(() => {
        (config.loadModels as unknown as { name: string; url: string }[]).push({ name: 'b', url: '/b' });
      }, TypeError);
    });

    it('does not read process.env', () => {
      process.env.MMS_TEST_ONLY_STORE = '/from-process-env';
      try {
        assertConfigError(() => resolve('model_store=$$MMS_TEST_ONLY_STORE$$'), 'MMS_TEST_ONLY_STORE is not set');
      } finally {
        delete process.env.MMS_TEST_ONLY_STORE;
      }
    });
  });
});
