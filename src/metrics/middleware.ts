/** Koa glue: the invocation timer around the invoke routes, and GET /metrics for Prometheus. */
import Koa, { type Context, type Next } from 'koa';
import type { InvokeResult } from '../server/jobs/job';
import type { MetricsRecorder } from './recorder';

/**
 * Times every request an invoke route claims (it sets ctx.state.model, and ctx.state.result once
 * the model answered) and reports it. Mount it outside the error middleware, so that the status it
 * reads is the one the client gets, 4xx and 5xx included.
 */
export function invocationMetrics(recorder: MetricsRecorder) {
  return async function invocationMetricsMiddleware(ctx: Context, next: Next): Promise<void> {
    const t0 = performance.now();
    try {
      await next();
    } finally {
      const model = ctx.state.model as string | undefined;
      if (model !== undefined) {
        const result = ctx.state.result as InvokeResult | undefined;
        recorder.invocation({
          model,
          status: ctx.status,
          totalMicros: Math.round((performance.now() - t0) * 1000),
          modelMicros: result?.modelMicros ?? 0,
          queueMicros: result?.queueMicros ?? 0,
          batchSize: result?.batchSize ?? 0,
        loadWaitMicros: result?.loadWaitMicros,
        });
      }
    }
  };
}

/** Answers GET/HEAD /metrics; everything else (and everything when metrics_prometheus is off) goes to `next`. */
export function metricsRoute(recorder: MetricsRecorder) {
  return async function metricsMiddleware(ctx: Context, next: Next): Promise<void> {
    const registry = recorder.prometheus?.registry;
    if (!registry || ctx.path !== '/metrics' || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
}

/** An app of its own for metrics_address: /metrics and nothing else. */
export function metricsApp(recorder: MetricsRecorder): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(metricsRoute(recorder));
  return app;
}
