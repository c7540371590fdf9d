/**
 * The line that says the server is ready: the mode and the limits in effect (so that a limit that
 * did not take, a typo'd key or a wrong file, shows here), how many models loaded, and which of the
 * switches an operator checks first are on: tokens, TLS, tracing, the model repository.
 */
import type { ServerConfig } from './config/types';

export interface ReadyFigures {
  readonly elapsedMs: number;
  readonly budgetBytes: number;
  readonly loaded: number;
  readonly failed: readonly string[];
  /** How memory_limit_mb and cpu_limit are held (cgroups, or the server's memory watch and why). */
  readonly modelLimits: string;
}

export function readyLine(config: ServerConfig, f: ReadyFigures): string {
  const limits = `max_loaded_models=${config.maxLoadedModels || 'no limit'}, ${Math.round(f.budgetBytes / 2 ** 20)} MiB model memory budget`;
  const mode = config.modelCache
    ? `self-managed cache (model_cache on: invokes load models of model_store by name, eviction_policy=${config.evictionPolicy}, ${limits})`
    : `SageMaker mode (model_cache off: the platform loads and unloads; ${limits})`;
  const failures = f.failed.length ? `, ${f.failed.length} failed (${f.failed.join(', ')}: see their lines above)` : '';
  const on = switchedOn(config);
  return `ready in ${Math.round(f.elapsedMs)} ms: ${mode}, worker_mode=${config.workerMode}, ${f.modelLimits}, ${f.loaded} models loaded${failures}${on.length ? `; on: ${on.join(', ')}` : ''}`;
}

/** The security and observability switches that are on, each as its key(s) and what it covers. */
function switchedOn(c: ServerConfig): string[] {
  const on: string[] = [];
  if (c.managementToken !== null) on.push('management_token (the management API needs it)');
  if (c.inferenceTokens.length > 0)
    on.push(
      `inference_token (${c.inferenceTokens.length} token${c.inferenceTokens.length > 1 ? 's' : ''}: invokes need one)`,
    );
  if (c.tls !== null)
    on.push(
      `TLS (certificate ${c.tls.certFile}${c.tls.clientCaFile === null ? '' : ', client certificates required'})`,
    );
  if (c.otelTracesSamplerRatio > 0)
    on.push(
      `tracing (otel_traces_sampler_ratio=${c.otelTracesSamplerRatio}, to ${c.otelExporterOtlpEndpoint ?? 'the OTEL_EXPORTER_OTLP_* endpoint'})`,
    );
  if (c.repository !== null) on.push(`model_repository ${c.repository.url}`);
  return on;
}
