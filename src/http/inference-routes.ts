/**
 * The data plane: /ping, SageMaker's per-model invoke, /invocations (model chosen by
 * X-Amzn-SageMaker-Target-Model) and MMS/TorchServe's /predictions/{name}.
 *
 * A response whose handler sends intermediate chunks is streamed with HTTP/1.1 chunked encoding:
 * the first chunk sends the status and headers, the final response is the last chunk.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { MmeError } from '../errors';
import type { ChunkMessage, InvokeRequest } from '../protocol/messages';
import type { ResponseHead } from '../model-types';
import type { InvokeResult } from '../server/jobs/job';
import type { ModelManager } from '../server/models/model-manager';
import { modelNotFound } from '../server/models/model-names';
import { readBodyChunks } from './body';
import { acceptOrDefault, cancelOnClientClose } from './client-request';

export const kCustomAttributes = 'x-amzn-sagemaker-custom-attributes';
const kTargetModel = 'x-amzn-sagemaker-target-model';
/** Ray Serve's model-multiplexing header. */
const kMultiplexedModel = 'serve_multiplexed_model_id';

export function defaultInvocationsAccept(): string {
  return process.env.SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT || 'application/json';
}

/**
 * `defaultAccept` answers requests that accept any type, as SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT
 * does in SageMaker's inference toolkit, which reads the variable itself.
 */
export function mountInferenceRoutes(router: Router, manager: ModelManager, maxRequestSize: number, defaultAccept = defaultInvocationsAccept()): void {
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
    const customAttributes = ctx.req.headers[kCustomAttributes] as string | undefined;
    const result = await invokeModel(ctx, target, { manager, maxRequestSize, defaultAccept, requestId: ctx.state.requestId as string }, (head) => {
      ctx.respond = false; // the body goes out piece by piece, not through Koa
      setHead(ctx, head, customAttributes);
    });
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
  router.post('/invocations', invoke((ctx) => invocationsTarget(ctx.req.headers, typeof ctx.query.model_name === 'string' ? ctx.query.model_name : '', manager)));
}

/** Status and headers; the request's custom attributes are echoed unless the handler set its own. */
function setHead(ctx: Context, head: ResponseHead, customAttributes: string | undefined): void {
  ctx.status = head.status;
  for (const [k, v] of Object.entries(head.headers)) ctx.set(k, v);
  if (customAttributes !== undefined && head.headers[kCustomAttributes] === undefined) ctx.set(kCustomAttributes, customAttributes);
  ctx.type = head.contentType || 'application/octet-stream';
}

export interface InvokeOptions {
  manager: ModelManager;
  maxRequestSize: number;
  defaultAccept: string;
  requestId: string;
}

/**
 * Reads the body and runs it on `target` (Koa's route and the lean route alike). A streaming
 * handler's chunks go out as they come: `onHead` sets the status and headers before the first, and
 * a chunk is acknowledged to the worker only once the client's socket took it (back-pressure: a
 * client that stops reading stops the handler, context.drained, instead of filling this process).
 */
export async function invokeModel(http: { req: IncomingMessage; res: ServerResponse }, target: string, opts: InvokeOptions, onHead: (head: ResponseHead) => void): Promise<InvokeResult> {
  const body = await readBodyChunks(http, opts.maxRequestSize);
  // Node's own header object: copied into the frame only for a custom handler, which may read it.
  const headers = http.req.headers;
  const request: InvokeRequest = { id: 0, requestId: opts.requestId, contentType: headers['content-type'] ?? '', accept: acceptOrDefault(headers.accept, opts.defaultAccept), headers, body };
  const onChunk = (chunk: ChunkMessage, delivered: () => void) => {
    if (chunk.head) onHead(chunk.head);
    http.res.write(chunk.body!, delivered);
  };
  try {
    return await opts.manager.invoke(target, request, { cancel: cancelOnClientClose(http.res), onChunk });
  } catch (err) {
    // The head and some chunks are out: an unfinished chunked body is the only failure signal left.
    if (http.res.headersSent) http.res.destroy();
    throw err;
  }
}

/**
 * SageMaker sends the TargetModel (e.g. "path/model-a.tar.gz") in a header; locally that header,
 * Ray Serve's serve_multiplexed_model_id or ?model_name= names the model. With neither, the only loaded model serves, as in single-model mode.
 */
export function invocationsTarget(headers: IncomingHttpHeaders, queryModel: string, manager: ModelManager): string {
  const header = (headers[kMultiplexedModel] as string | undefined) || (headers[kTargetModel] as string | undefined) || '';
  const wanted = header || queryModel;
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
