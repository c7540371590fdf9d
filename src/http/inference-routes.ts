/**
 * The data plane: /ping, SageMaker's per-model invoke, /invocations (model chosen by
 * X-Amzn-SageMaker-Target-Model) and MMS/TorchServe's /predictions/{name}.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { MmeError } from '../errors';
import type { WireRequest } from '../protocol/frames';
import type { ModelManager } from '../server/model-manager';
import { readBody } from './body';

const kCustomAttributes = 'x-amzn-sagemaker-custom-attributes';
const kTargetModel = 'x-amzn-sagemaker-target-model';
/** Ray Serve's model-multiplexing header. */
const kMultiplexedModel = 'serve_multiplexed_model_id';

export function mountInferenceRoutes(router: Router, manager: ModelManager, maxRequestSize: number): void {
  router.get('/ping', (ctx) => {
    const failed = manager.list().some((m) => m.model.state === 'failed');
    ctx.body = { status: failed ? 'Partial Healthy' : 'Healthy' };
  });

  const invoke = (name: (ctx: Context) => string) => async (ctx: Context) => {
    const target = name(ctx);
    ctx.state.model = target;
    // 404 before reading a body that would be thrown away.
    if (!manager.knows(target)) throw new MmeError('MME_ERR_MODEL_NOT_FOUND', `Model not found: ${target}`);
    const body = await readBody(ctx.req, maxRequestSize);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const request: WireRequest = { id: 0, contentType: headers['content-type'] ?? '', accept: headers.accept ?? '', headers, body };
    // A client that leaves before its request reaches a worker should cost nothing.
    const abort = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) abort.abort();
    });
    const result = await manager.invoke(target, request, { signal: abort.signal });
    ctx.state.result = result; // read by the metrics middleware (model time, queue time, batch size)
    ctx.status = result.status;
    for (const [k, v] of Object.entries(result.headers)) ctx.set(k, v);
    if (headers[kCustomAttributes] !== undefined && result.headers[kCustomAttributes] === undefined) ctx.set(kCustomAttributes, headers[kCustomAttributes]);
    ctx.type = result.contentType;
    ctx.body = result.body;
  };

  router.post('/models/:name/invoke', invoke((ctx) => ctx.params.name));
  router.post('/predictions/:name', invoke((ctx) => ctx.params.name));
  router.post('/invocations', invoke((ctx) => invocationsTarget(ctx, manager)));
}

/**
 * SageMaker sends the TargetModel (e.g. "path/model-a.tar.gz") in a header; locally that header,
 * Ray Serve's serve_multiplexed_model_id or ?model_name= names the model. With neither, the only loaded model serves, as in single-model mode.
 */
function invocationsTarget(ctx: Context, manager: ModelManager): string {
  const header = ctx.get(kMultiplexedModel) || ctx.get(kTargetModel);
  const query = typeof ctx.query.model_name === 'string' ? ctx.query.model_name : '';
  const wanted = header || query;
  const loaded = manager.list();
  if (wanted) {
    if (loaded.some((m) => m.name === wanted)) return wanted;
    const base = wanted.split('/').pop()!.replace(/\.(tar\.gz|tgz)$/, '');
    return base;
  }
  if (loaded.length === 1) return loaded[0].name;
  throw new MmeError('MME_ERR_BAD_REQUEST', loaded.length === 0
    ? 'No model is loaded. Load one with POST /models, then invoke it.'
    : `${loaded.length} models are loaded; name the target with the X-Amzn-SageMaker-Target-Model header or POST /models/{name}/invoke.`);
}
