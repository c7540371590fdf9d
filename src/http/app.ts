import type http from 'node:http';
import Router from '@koa/router';
import Koa from 'koa';
import { MmeError } from '../errors';
import type { InferenceToken } from '../gateway/bearer-tokens';
import type { ServerConfig } from '../config/types';
import type { MetricsRecorder } from '../metrics';
import type { ModelManager } from '../gateway/models';
import { errorResponse, methodNotAllowed } from './error-response';
import { bearerToken, listenerGuards, type ListenerGuards } from './guards';
import { invokeRoute, type InvokeRouteOptions } from './invoke-route';
import { kMaxHeadersCount, koaListener } from './listener';
import { mountManagementRoutes } from './management-routes';
import { metricsRoute } from './metrics-route';
import { mountMetadataRoutes } from './metadata-routes';
import { requestId } from './request-id';

export type ListenerRole = 'inference' | 'management' | 'both';

export interface AppOptions
  extends Pick<ServerConfig, 'maxRequestSize' | 'managementToken' | 'accessLog'>,
    Pick<InvokeRouteOptions, 'gateway' | 'log'> {
  role: ListenerRole;
  manager: ModelManager;
  metrics: MetricsRecorder;
  /** GET /metrics on this listener's management side (false when metrics_address has its own). */
  serveMetrics: boolean;
  loopbackOnly: boolean;
  inferenceToken: InferenceToken | null;
}

/** The invoke routes on a listener's inference side, Koa everything else. */
export function requestListener(opts: AppOptions): http.RequestListener {
  const guards: ListenerGuards = {
    maxHeaders: kMaxHeadersCount,
    door: opts.gateway.door({
      transport: 'http',
      loopbackOnly: opts.loopbackOnly,
      inferenceToken: opts.role === 'management' ? null : opts.inferenceToken,
    }),
  };
  const koa = koaListener(koaApp(opts, guards));
  if (opts.role === 'management') return koa;
  const invoke = invokeRoute({
    gateway: opts.gateway,
    registry: opts.manager.registry,
    guards,
    maxRequestSize: opts.maxRequestSize,
    accessLog: opts.accessLog ? opts.log : null,
    log: opts.log,
  });
  return (req, res) => {
    if (!invoke(req, res)) koa(req, res);
  };
}

function koaApp(opts: AppOptions, guards: ListenerGuards): Koa {
  const app = new Koa();
  app.silent = true;
  const router = new Router();
  // management_token guards what the management side serves: its API and /metrics, which names
  // every model as GET /models does.
  const managementGuard: Koa.Middleware = opts.managementToken
    ? bearerToken(opts.managementToken, () => opts.metrics.unauthorized())
    : (_ctx, next) => next();
  if (opts.role !== 'management') mountMetadataRoutes(router, opts.manager);
  if (opts.role !== 'inference') mountManagementRoutes(router, opts.manager, managementGuard);
  app.use(requestId(opts.accessLog ? opts.log : null));
  app.use(errorResponse(opts.gateway));
  app.use(listenerGuards(guards));
  if (opts.role !== 'inference' && opts.serveMetrics) app.use(metricsRoute(opts.metrics, managementGuard));
  app.use(router.routes());
  app.use(
    router.allowedMethods({
      throw: true,
      methodNotAllowed,
      notImplemented: () => new MmeError('MME_ERR_METHOD_NOT_ALLOWED', 'Method not implemented.'),
    }),
  );
  return app;
}
