/**
 * The data plane: /ping, SageMaker's per-model invoke, /invocations (model chosen by
 * X-Amzn-SageMaker-Target-Model) and MMS/TorchServe's /predictions/{name}.
 *
 * A response whose handler sends intermediate chunks is streamed with HTTP/1.1 chunked encoding:
 * the first chunk sends the status and headers, the final response is the last chunk.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { MmeError } from '../errors';
import type { ChunkMessage, ResponseHead, WireRequest } from '../protocol/frames';
import type { ModelManager } from '../server/models/model-manager';
import { modelNotFound } from '../server/models/model-names';
import { readBodyChunks } from './body';
import { acceptOrDefault, cancelOnClientClose } from './client-request';

const kCustomAttributes = 'x-amzn-sagemaker-custom-attributes';
const kTargetModel = 'x-amzn-sagemaker-target-model';
/** Ray Serve's model-multiplexing header. */
const kMultiplexedModel = 'serve_multiplexed_model_id';

/**
 * `defaultAccept` answers requests that accept any type, as SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT
 * does in SageMaker's inference toolkit, which reads the variable itself.
 */
export function mountInferenceRoutes(router: Router, manager: ModelManager, maxRequestSize: number, defaultAccept = process.env.SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT || 'application/json'): void {
  router.get('/ping', (ctx) => {
    const failed = manager.list().some((m) => m.failed);
    ctx.body = { status: failed ? 'Partial Healthy' : 'Healthy' };
  });

  const invoke = (name: (ctx: Context) => string) => async (ctx: Context) => {
    const target = name(ctx);
    const known = manager.knows(target);
    // Metrics name a model only once the server knows it: any other name is client text, unbounded
    // in length and number, and must not become a metric dimension.
    ctx.state.model = known ? target : '';
    // 404 before reading a body that would be thrown away.
    if (!known) throw modelNotFound(target);
    const body = await readBodyChunks(ctx, maxRequestSize);
    // Node's own header object: copied into the frame only for a custom handler, which may read it.
    const headers = ctx.req.headers;
    const accept = acceptOrDefault(headers.accept, defaultAccept);
    const customAttributes = ctx.req.headers[kCustomAttributes] as string | undefined;
    const request: WireRequest = { id: 0, requestId: ctx.state.requestId as string, contentType: headers['content-type'] ?? '', accept, headers, body };
    const cancel = cancelOnClientClose(ctx);
    // Back-pressure: a chunk is acknowledged to the worker only once the client's socket took it,
    // so a client that stops reading stops the handler (context.drained) instead of filling this process.
    const onChunk = (chunk: ChunkMessage, delivered: () => void) => {
      if (chunk.head) {
        ctx.respond = false; // the body goes out piece by piece below, not through Koa
        setHead(ctx, chunk.head, customAttributes);
      }
      ctx.res.write(chunk.body!, delivered);
    };
    let result;
    try {
      result = await manager.invoke(target, request, { cancel, onChunk });
    } catch (err) {
      // The head and some chunks are out: an unfinished chunked body is the only failure signal left.
      if (ctx.res.headersSent) ctx.res.destroy();
      throw err;
    }
    ctx.state.result = result; // read by the metrics middleware (model time, queue time, batch size)
    if (ctx.res.headersSent) {
      ctx.res.end(result.body);
      return;
    }
    setHead(ctx, result, customAttributes);
    ctx.body = result.body;
  };

  router.post('/models/:name/invoke', invoke((ctx) => ctx.params.name));
  router.post('/predictions/:name', invoke((ctx) => ctx.params.name));
  router.post('/invocations', invoke((ctx) => invocationsTarget(ctx, manager)));
}

/** Status and headers; the request's custom attributes are echoed unless the handler set its own. */
function setHead(ctx: Context, head: ResponseHead, customAttributes: string | undefined): void {
  ctx.status = head.status;
  for (const [k, v] of Object.entries(head.headers)) ctx.set(k, v);
  if (customAttributes !== undefined && head.headers[kCustomAttributes] === undefined) ctx.set(kCustomAttributes, customAttributes);
  ctx.type = head.contentType || 'application/octet-stream';
}

/**
 * SageMaker sends the TargetModel (e.g. "path/model-a.tar.gz") in a header; locally that header,
 * Ray Serve's serve_multiplexed_model_id or ?model_name= names the model. With neither, the only loaded model serves, as in single-model mode.
 */
function invocationsTarget(ctx: Context, manager: ModelManager): string {
  const header = ctx.get(kMultiplexedModel) || ctx.get(kTargetModel);
  const query = typeof ctx.query.model_name === 'string' ? ctx.query.model_name : '';
  const wanted = header || query;
  if (wanted) {
    if (manager.registered(wanted)) return wanted;
    return wanted.split('/').pop()!.replace(/\.(tar\.gz|tgz)$/, '');
  }
  const only = manager.onlyModel();
  if (only !== null) return only;
  const loaded = manager.servingCount();
  throw new MmeError('MME_ERR_BAD_REQUEST', loaded === 0
    ? 'No model is loaded. Load one with POST /models, then invoke it.'
    : `${loaded} models are loaded; name the target with the X-Amzn-SageMaker-Target-Model header or POST /models/{name}/invoke.`);
}
