/** GET /metrics for Prometheus, on the management side or on metrics_address's listener of its own. */
import Koa, { type Context, type Next } from 'koa';
import type { MetricsRecorder } from '../metrics';

/** Answers GET/HEAD /metrics; everything else (and everything when metrics_prometheus is off) goes to `next`. */
export function metricsRoute(recorder: MetricsRecorder) {
  return async function metricsMiddleware(ctx: Context, next: Next): Promise<void> {
    const registry = recorder.prometheus?.registry;
    if (!registry || ctx.path !== '/metrics' || (ctx.method !== 'GET' && ctx.method !== 'HEAD'))
      return next() as Promise<void>;
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
