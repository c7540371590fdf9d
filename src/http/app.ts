import Router from '@koa/router';
import Koa from 'koa';
import { MmeError } from '../errors';
import { invocationMetrics, metricsRoute, type MetricsRecorder } from '../metrics';
import type { ModelManager } from '../server/models/model-manager';
import { errorResponse } from './error-response';
import { requestId } from './request-id';
import { bearerToken, crossSiteGuard, headerCountGuard, loopbackHostGuard, refuseWhileClosing } from './guards';
import { defaultInvocationsAccept, mountInferenceRoutes } from './inference-routes';
import { leanInvokeRoute } from './lean-invoke';
import { kMaxHeadersCount, setLeanRoute } from './listener';
import { mountManagementRoutes } from './management-routes';
import { mountV2Routes } from './v2-routes';

export type ListenerRole = 'inference' | 'management' | 'both';

export interface AppOptions {
  role: ListenerRole;
  manager: ModelManager;
  metrics: MetricsRecorder;
  /** GET /metrics on this listener's management side (false when metrics_address has its own). */
  serveMetrics: boolean;
  maxRequestSize: number;
  /** The listener is on a loopback address: refuse requests for other Host names. */
  loopbackOnly: boolean;
  managementToken: string | null;
  /** One line per request (access_log). */
  accessLog: boolean;
  log: (line: string) => void;
}

/** One Koa app per listener: the SageMaker port (role both) serves the data plane and management alike. */
export function createApp(opts: AppOptions): Koa {
  const app = new Koa();
  app.silent = true;
  const router = new Router();
  if (opts.role !== 'management') {
    mountInferenceRoutes(router, opts.manager, opts.maxRequestSize);
    mountV2Routes(router, opts.manager, opts.maxRequestSize);
  }
  if (opts.role !== 'inference') mountManagementRoutes(router, opts.manager, opts.managementToken ? bearerToken(opts.managementToken) : (_ctx, next) => next());
  app.use(requestId(opts.accessLog ? opts.log : null));
  // Before errorResponse, so it sees the final status of failed requests too.
  app.use(invocationMetrics(opts.metrics));
  app.use(errorResponse(opts.log));
  app.use(headerCountGuard(kMaxHeadersCount));
  app.use(refuseWhileClosing(() => opts.manager.closing));
  if (opts.loopbackOnly) app.use(loopbackHostGuard());
  app.use(crossSiteGuard());
  if (opts.role !== 'inference' && opts.serveMetrics) app.use(metricsRoute(opts.metrics));
  app.use(router.routes());
  if (opts.role !== 'management') {
    setLeanRoute(app, leanInvokeRoute({
      manager: opts.manager, metrics: opts.metrics, maxRequestSize: opts.maxRequestSize, maxHeaders: kMaxHeadersCount,
      loopbackOnly: opts.loopbackOnly, accessLog: opts.accessLog ? opts.log : null, log: opts.log, defaultAccept: defaultInvocationsAccept(),
    }));
  }
  app.use(router.allowedMethods({
    throw: true,
    methodNotAllowed: () => new MmeError('MME_ERR_METHOD_NOT_ALLOWED', 'Method not allowed for this resource; see docs/api.md.'),
    notImplemented: () => new MmeError('MME_ERR_METHOD_NOT_ALLOWED', 'Method not implemented.'),
  }));
  return app;
}
