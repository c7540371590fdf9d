/**
 * The composition root: config → model manager → gateway → listeners (the doors). Owns start-up
 * (startup models) and shutdown (stop accepting, drain, stop every worker).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { modelNameFromUrl } from './config/load-models';
import type { ServerConfig } from './config/types';
import type { GrpcListener } from './grpc/grpc-server';
import { InferenceToken } from './gateway/bearer-tokens';
import { Gateway } from './gateway/gateway';
import { RequestTracer } from './gateway/tracing';
import { requestListener, type ListenerRole } from './http/app';
import { koaListener, listen, type Listener } from './http/listener';
import { metricsApp } from './http/metrics-route';
import { createLog } from './logger';
import { kDefaultLimits, type ListenerLimits } from './util/listener-limits';
import { isLoopback } from './util/loopback';
import { realClock, type Clock } from './util/clock';
import { TlsFiles } from './util/tls-files';
import { createMetrics, type MetricsRecorder } from './metrics';
import { ModelManager, type ShutdownCounts } from './server/models/model-manager';
import { ProcessRegistry } from './server/processes/worker-spawn';

export interface MmeServerOptions {
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Timeouts of every listener; max_connections still comes from the config. Tests shorten them. */
  listenerLimits?: Omit<Partial<ListenerLimits>, 'maxConnections'>;
  /** What every timer and `now` of the lifecycle core runs on (the real clock but in tests). */
  clock?: Clock;
}

export class MmeServer {
  readonly manager: ModelManager;
  /** This server's worker processes: what its shutdown kills, what tests count. */
  readonly processes = new ProcessRegistry();
  readonly metrics: MetricsRecorder;
  readonly gateway: Gateway;
  /** OpenTelemetry traces of the invocations; null = off (otel_traces_sampler_ratio 0). */
  readonly tracer: RequestTracer | null;
  readonly listeners: Array<Listener & { role: ListenerRole }> = [];
  #metricsListener: Listener | null = null;
  /** load_models that failed to load at start-up (each logged with its reason). */
  readonly startupFailures: string[] = [];
  grpc: GrpcListener | null = null;
  /** Where .tar.gz artifacts are extracted (one fresh directory per load, removed on unload). */
  readonly cacheDir: string;
  readonly #log: (line: string) => void;
  readonly #limits: ListenerLimits;
  readonly #inferenceToken: InferenceToken | null;
  /** The certificate every TLS listener serves, watched for rotation; null without tls_cert_file. */
  #tls: TlsFiles | null = null;

  constructor(
    readonly config: ServerConfig,
    opts: MmeServerOptions = {},
  ) {
    this.#log = opts.log ?? createLog({ format: config.logFormat, level: config.logLevel });
    this.#limits = { ...kDefaultLimits, ...opts.listenerLimits, maxConnections: config.maxConnections };
    this.cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-artifacts-'));
    this.manager = new ModelManager(config, this.cacheDir, this.#log, {
      env: opts.env,
      clock: opts.clock ?? realClock,
      processes: this.processes,
    });
    this.metrics = createMetrics(config, { log: this.#log });
    this.manager.events.sink = this.metrics;
    if (this.manager.repository) this.manager.repository.events = this.metrics;
    this.tracer =
      config.otelTracesSamplerRatio > 0
        ? new RequestTracer({
            ratio: config.otelTracesSamplerRatio,
            endpoint: config.otelExporterOtlpEndpoint,
            log: this.#log,
          })
        : null;
    this.gateway = new Gateway({
      models: this.manager.onDemand,
      server: this.manager.lifecycle,
      metrics: this.metrics,
      log: this.#log,
      defaultAccept: process.env.SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT || 'application/json',
      controls: { maxRequestTimeoutMs: config.maxRequestTimeoutSeconds * 1000, priorityLevels: config.priorityLevels },
      clock: opts.clock ?? realClock,
      tracer: this.tracer,
    });
    this.#inferenceToken = config.inferenceTokens.length
      ? new InferenceToken(config.inferenceTokens, () => this.metrics.unauthorized())
      : null;
  }

  /** Listens first (so /ping answers while startup models load), then loads load_models. */
  async start(): Promise<this> {
    const c = this.config;
    // Read first: a missing, unreadable or mismatched file stops start-up before any port is taken.
    if (c.tls) this.#tls = await TlsFiles.open(c.tls, realClock, this.#log);
    const roles: Array<[ListenerRole, ServerConfig['inferenceAddress']]> = c.sharedListener
      ? [['both', c.inferenceAddress]]
      : [
          ['inference', c.inferenceAddress],
          ['management', c.managementAddress],
        ];
    for (const [role, addr] of roles) {
      const handler = requestListener({
        role,
        gateway: this.gateway,
        manager: this.manager,
        metrics: this.metrics,
        serveMetrics: c.metricsAddress === null,
        maxRequestSize: c.maxRequestSize,
        loopbackOnly: addr.scheme !== 'unix' && isLoopback(addr.host),
        managementToken: c.managementToken,
        inferenceToken: this.#inferenceToken,
        accessLog: c.accessLog,
        log: this.#log,
      });
      const listener = await listen(handler, addr, this.#limits, this.#tls);
      this.listeners.push({ ...listener, role });
      this.#log(`${role === 'both' ? 'inference + management' : role} API listening on ${listener.address}`);
    }
    if (c.metricsAddress) {
      this.#metricsListener = await listen(
        koaListener(metricsApp(this.metrics)),
        c.metricsAddress,
        this.#limits,
        this.#tls,
      );
      this.#log(`metrics (Prometheus) listening on ${this.#metricsListener.address}`);
    }
    if (c.grpcInferencePort !== null) {
      // Loaded only when configured: grpc-js and protobufjs are a good part of the server's heap.
      const { GrpcListener } = await import('./grpc/grpc-server');
      this.grpc = await GrpcListener.listen(
        {
          host: c.grpcInferenceAddress,
          port: c.grpcInferencePort,
          maxRequestSize: c.maxRequestSize,
          tls: this.#tls,
          limits: this.#limits,
        },
        {
          gateway: this.gateway,
          manager: this.manager,
          guard: this.gateway.door({
            transport: 'grpc',
            loopbackOnly: isLoopback(c.grpcInferenceAddress),
            inferenceToken: this.#inferenceToken,
          }),
        },
      );
      this.#log(
        `gRPC inference API (KServe v2, TorchServe) listening on ${this.grpc.address}${this.#tls ? ' (TLS)' : ''}`,
      );
    }
    this.metrics.start();
    await this.#loadStartupModels();
    return this;
  }

  url(role: 'inference' | 'management'): string {
    return this.listeners.find((x) => x.role === role || x.role === 'both')!.address;
  }

  async #loadStartupModels(): Promise<void> {
    const { loadModels, modelStore } = this.config;
    // Urls as written, relative to model_store like an API load's: modelUrl and the log read the same either way.
    let models: Array<{ name: string; url: string }>;
    if (loadModels === 'ALL') {
      if (!modelStore) {
        this.#log('load_models=ALL but model_store is not set; no model loaded at start-up');
        return;
      }
      models = fs
        .readdirSync(modelStore, { withFileTypes: true })
        .filter((d) => d.isDirectory() || /\.(tar\.gz|tgz)$/.test(d.name))
        .map((d) => ({ name: modelNameFromUrl(d.name), url: d.name }));
    } else {
      models = loadModels.map((m) => ({ name: m.name, url: m.url }));
    }
    await Promise.all(
      models.map(async (m) => {
        try {
          await this.manager.lifecycle.load({ modelName: m.name, url: m.url, loadedAtStartup: true });
        } catch {
          // The load has logged why; the ready line counts it.
          this.startupFailures.push(m.name);
        }
      }),
    );
  }

  /** Stops accepting, lets admitted requests finish (up to drainMs), stops every worker. */
  async close(drainMs = 0): Promise<ShutdownCounts> {
    const closing = [...this.listeners.map((l) => l.close()), this.grpc?.close()];
    const counts = await this.manager.close(drainMs);
    this.grpc?.kill();
    // After the drain, so the last interval includes the requests it let finish.
    await Promise.all([this.metrics.close(), this.tracer?.close()]);
    for (const l of this.listeners) l.server.closeAllConnections();
    await Promise.all([...closing, this.#metricsListener?.close()]);
    this.#tls?.close();
    fs.rmSync(this.cacheDir, { recursive: true, force: true });
    return counts;
  }
}
