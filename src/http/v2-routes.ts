/**
 * The Open Inference Protocol v2 over REST (KServe, Triton, MLServer clients): health, server and
 * model metadata, model readiness and inference, JSON or with Triton's binary tensor extension.
 * An infer body goes to the worker as it came (a JSON header, then any binary tensors), so raw
 * tensors are never turned into JSON; the answer comes back the same way. Errors under /v2 are
 * OIP's {"error": "..."} (error-response.ts).
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import { MmeError, quote } from '../errors';
import { HEADER_LENGTH_HEADER, headerLengthOf } from '../oip/binary-body';
import { oipWireRequest } from '../gateway/oip/infer-request';
import { checkVersion, modelMetadata, modelReady, serverMetadata } from '../gateway/oip/model-metadata';
import type { ModelManager } from '../server/models/model-manager';
import { modelNotFound } from '../server/models/model-names';
import { readBody } from './body';
import { cancelOnClientClose } from './client-request';

export function isOipPath(path: string): boolean {
  return path === '/v2' || path.startsWith('/v2/');
}

export function oipErrorBody(e: MmeError): { error: string } {
  return { error: e.message };
}

const kModel = '/v2/models/:name';
const kVersioned = '/v2/models/:name/versions/:version';

export function mountV2Routes(router: Router, manager: ModelManager, maxRequestSize: number): void {
  router.get('/v2', (ctx) => {
    ctx.body = serverMetadata();
  });
  router.get('/v2/health/live', (ctx) => {
    ctx.body = { live: true };
  });
  // Shutdown answers 503 before any route (refuseWhileClosing), so reaching here means ready.
  router.get('/v2/health/ready', (ctx) => {
    ctx.body = { ready: true };
  });

  for (const base of [kModel, kVersioned]) {
    router.get(base, (ctx) => {
      ctx.body = modelMetadata(manager, ctx.params.name!, ctx.params.version);
    });
    router.get(`${base}/ready`, (ctx) => {
      const name = ctx.params.name!;
      const ready = modelReady(manager, name, ctx.params.version);
      // OIP: 200 means ready; not ready (loading, failing, or in model_store and not loaded yet) is 503 as in KServe.
      ctx.status = ready ? 200 : 503;
      ctx.body = { name, ready };
    });
    router.post(`${base}/infer`, (ctx) => infer(ctx, manager, maxRequestSize));
  }
}

async function infer(ctx: Context, manager: ModelManager, maxRequestSize: number): Promise<void> {
  const name = ctx.params.name!;
  checkVersion(name, ctx.params.version);
  const known = manager.knows(name);
  // Metrics name only models the server knows: any other name is unbounded client text.
  ctx.state.model = known ? name : '';
  if (!known) throw modelNotFound(name);
  const body = await readBody(ctx, maxRequestSize);
  const declared = ctx.get(HEADER_LENGTH_HEADER);
  // A value that is not a byte count must not fall back to "the whole body is the header".
  if (declared && !/^\d{1,15}$/.test(declared)) {
    throw new MmeError('MME_ERR_INVALID_INPUT', `${HEADER_LENGTH_HEADER} is ${quote(declared)}; set it to the byte length of the JSON inference header (a decimal number), or leave it out when the body is JSON only`);
  }
  const headerLength = declared ? Number(declared) : headerLengthOf(ctx.get('content-type')) ?? body.length;
  const result = await manager.invoke(name, oipWireRequest(ctx.state.requestId as string, body, headerLength, ctx.req.headers), { cancel: cancelOnClientClose(ctx.res) });
  ctx.state.result = result;
  ctx.status = result.status;
  for (const [k, v] of Object.entries(result.headers)) ctx.set(k, v);
  const answerHeader = headerLengthOf(result.contentType);
  if (answerHeader === null) ctx.type = result.contentType || 'application/octet-stream';
  else if (answerHeader === result.body.length) ctx.type = 'application/json';
  else {
    ctx.type = 'application/octet-stream';
    ctx.set(HEADER_LENGTH_HEADER, String(answerHeader));
  }
  ctx.body = result.body;
}
