/** GET /metrics for Prometheus, on the management side or on metrics_address's listener. */
import Koa, { type Context, type Middleware, type Next } from 'koa';
import type { MetricsRecorder } from '../metrics';

/** Everything else (all of it when metrics_prometheus is off) goes to `next`. */
export function metricsRoute(recorder: MetricsRecorder, guard?: Middleware) {
  return async function metricsMiddleware(ctx: Context, next: Next): Promise<void> {
    const registry = recorder.prometheus?.registry;
    if (!registry || ctx.path !== '/metrics' || (ctx.method !== 'GET' && ctx.method !== 'HEAD'))
      return next() as Promise<void>;
    const serve = async () => {
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
    };
    await (guard ? guard(ctx, serve) : serve());
  };
}

/** An app of its own for metrics_address: /metrics and nothing else. */
export function metricsApp(recorder: MetricsRecorder): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(metricsRoute(recorder));
  return app;
}
