/** The data plane's health and metadata on Koa: SageMaker's /ping and OIP v2 over REST (KServe, Triton, MLServer). */
import type Router from '@koa/router';
import { modelMetadata, modelReady, pingStatus, serverMetadata } from '../gateway/oip/model-metadata';
import type { ModelManager } from '../gateway/models';

const kModel = '/v2/models/:name';
const kVersioned = '/v2/models/:name/versions/:version';

export function mountMetadataRoutes(router: Router, manager: ModelManager): void {
  const fixed: Array<[string, () => unknown]> = [
    ['/ping', () => pingStatus(manager.registry)],
    ['/v2', serverMetadata],
    ['/v2/health/live', () => ({ live: true })],
    // Shutdown answers 503 before any route (listenerGuards), so reaching here means ready.
    ['/v2/health/ready', () => ({ ready: true })],
  ];
  for (const [route, body] of fixed)
    router.get(route, (ctx) => {
      ctx.body = body();
    });

  for (const base of [kModel, kVersioned]) {
    router.get(base, (ctx) => {
      ctx.body = modelMetadata(manager.registry, ctx.params.name, ctx.params.version);
    });
    router.get(`${base}/ready`, (ctx) => {
      const name = ctx.params.name;
      const ready = modelReady(manager, name, ctx.params.version);
      // OIP: 200 means ready; not ready (loading, failing, or in model_store and not loaded yet) is 503 as in KServe.
      ctx.status = ready ? 200 : 503;
      ctx.body = { name, ready };
    });
  }
}
