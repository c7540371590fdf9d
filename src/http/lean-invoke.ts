/**
 * The invoke routes without Koa: POST /models/{name}/invoke and POST /invocations for a model the
 * server knows, on a request every guard lets through, go straight from node:http to the model
 * manager — no context, no middleware dispatch, no router matching, a handful of objects a
 * request. Everything else (a guard that refuses, an unknown model, a query string, a percent-
 * encoded or unusual path or Host) is declined before anything is read or answered, and Koa serves
 * it as before: every refusal keeps its one implementation.
 *
 * What a request taken here gets is what Koa's stack gives it: the request id (header, handler,
 * log, access log), the invocation metrics with the final status, the same error bodies, headers
 * and log lines (error-response.ts), the 499 on a client that closes, and the same response head
 * (Koa's status, Content-Type and Content-Length rules, below).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { MetricsRecorder } from '../metrics';
import type { ResponseHead } from '../protocol/frames';
import type { InvokeResult } from '../server/jobs/job';
import type { ModelManager } from '../server/models/model-manager';
import { asMmeError, errorBodyText, errorLine } from './error-response';
import { isLoopback } from './guards';
import { invocationsTarget, invokeModel, kCustomAttributes } from './inference-routes';
import { accessLine } from './request-id';

export interface LeanInvokeOptions {
  manager: ModelManager;
  metrics: MetricsRecorder;
  maxRequestSize: number;
  /** Requests with more headers than this are Koa's to refuse (431). */
  maxHeaders: number;
  loopbackOnly: boolean;
  accessLog: ((line: string) => void) | null;
  log: (line: string) => void;
  defaultAccept: string;
}

/** Takes the request (true) or leaves it to Koa (false) without touching it. */
export type LeanRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

/** Koa's route patterns, as its error log lines name them. */
const kInvocationsRoute = '/invocations';
/** Names the router would hand over as they are: no '/', no percent-escape to decode, no query. */
const kNamedRoutes: ReadonlyArray<[RegExp, string]> = [
  [/^\/models\/([^/%?#]+)\/invoke$/, '/models/:name/invoke'],
  [/^\/predictions\/([^/%?#]+)$/, '/predictions/:name'],
];

/**
 * Koa sets Content-Type through mime-types' contentType (adding "; charset=utf-8" to text and JSON,
 * expanding a bare extension, dropping what it cannot read). The same copy Koa loads, so the two
 * routes cannot drift apart.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const mimeTypes = require(require.resolve('mime-types', { paths: [path.dirname(require.resolve('koa'))] })) as { contentType(type: string): string | false };
const kContentTypes = new Map<string, string | false>();
/** Handlers choose content types from a small set; the cache is only bounded against one that does not. */
const kContentTypesCached = 64;

function contentType(type: string): string | false {
  let out = kContentTypes.get(type);
  if (out === undefined) {
    out = mimeTypes.contentType(type);
    if (kContentTypes.size >= kContentTypesCached) kContentTypes.clear();
    kContentTypes.set(type, out);
  }
  return out;
}

/** Statuses whose answers carry no body (Koa's statuses.empty). */
const kEmptyStatuses = new Set([204, 205, 304]);

/** Koa's ctx.hostname for the plain Host values this route takes; null for any other (Koa decides). */
function plainHostname(req: IncomingMessage): string | null {
  const host = req.headers.host;
  if (!host || host[0] === '[' || host.includes('@') || host.includes(',')) return null;
  return host.split(':', 1)[0]!;
}

/** The model the request is for, or null when Koa should take it. */
function targetOf(req: IncomingMessage, manager: ModelManager): { target: string; route: string } | null {
  const url = req.url ?? '';
  if (url === kInvocationsRoute) {
    try {
      return { target: invocationsTarget(req.headers, '', manager), route: kInvocationsRoute };
    } catch {
      return null; // no target: Koa's route answers 400
    }
  }
  for (const [pattern, route] of kNamedRoutes) {
    const m = pattern.exec(url);
    if (m) return { target: m[1]!, route };
  }
  return null;
}

export function leanInvokeRoute(opts: LeanInvokeOptions): LeanRoute {
  const { manager, metrics, log, accessLog } = opts;
  const invokeOpts = { manager, maxRequestSize: opts.maxRequestSize, defaultAccept: opts.defaultAccept };

  /** Koa's response for an answer: its status, the handler's headers, Koa's type and length rules. */
  const setHead = (res: ServerResponse, head: ResponseHead, customAttributes: string | undefined): void => {
    // Koa's status setter asserts this range; out of it the route fails with a 500, as here.
    if (!Number.isInteger(head.status) || head.status < 100 || head.status > 999) throw new Error(`invalid status code: ${head.status}`);
    res.statusCode = head.status;
    // Koa's ctx.set skips an empty name.
    for (const [k, v] of Object.entries(head.headers)) if (k) res.setHeader(k, v);
    if (customAttributes !== undefined && head.headers[kCustomAttributes] === undefined) res.setHeader(kCustomAttributes, customAttributes);
    const type = contentType(head.contentType || 'application/octet-stream');
    if (type) res.setHeader('Content-Type', type);
    else res.removeHeader('Content-Type');
  };

  /** Koa's respond(): nothing to a gone client, no body for an empty status. */
  const send = (res: ServerResponse, body: Buffer | string): void => {
    if (res.writableEnded || (res.socket !== null && !res.socket.writable)) {
      res.end();
      return;
    }
    if (kEmptyStatuses.has(res.statusCode)) {
      for (const h of ['Content-Type', 'Content-Length', 'Transfer-Encoding']) res.removeHeader(h);
      res.end();
      return;
    }
    if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/octet-stream');
    if (!res.hasHeader('Transfer-Encoding')) res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, target: string, route: string): Promise<void> => {
    const t0 = performance.now();
    const requestId = randomUUID();
    res.setHeader('x-request-id', requestId);
    res.statusCode = 404; // Koa's start, which a failure before any status keeps
    const customAttributes = req.headers[kCustomAttributes] as string | undefined;
    let result: InvokeResult | undefined;
    let answer: Buffer | string | null = null;
    try {
      result = await invokeModel({ req, res }, target, { ...invokeOpts, requestId }, (head) => setHead(res, head, customAttributes));
      if (res.headersSent) res.end(result.body);
      else {
        setHead(res, result, customAttributes);
        answer = result.body;
      }
    } catch (err) {
      const e = asMmeError(err, log);
      log(errorLine(requestId, 'POST', route, e));
      if (!res.headersSent) {
        res.statusCode = e.status;
        for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
        res.setHeader('Content-Type', contentType('application/json') as string);
      }
      answer = errorBodyText(e, req.url ?? '');
    }
    metrics.invocation({
      model: target,
      status: res.statusCode,
      totalMicros: Math.round((performance.now() - t0) * 1000),
      modelMicros: result?.modelMicros ?? 0,
      queueMicros: result?.queueMicros ?? 0,
      batchSize: result?.batchSize ?? 0,
      loadWaitMicros: result?.loadWaitMicros,
    });
    accessLog?.(accessLine(req, res.statusCode, performance.now() - t0, requestId));
    // Streamed (Koa's ctx.respond = false): ended above, or destroyed when the stream broke off.
    if (!res.headersSent && answer !== null) send(res, answer);
  };

  return (req, res) => {
    if (req.method !== 'POST' || req.rawHeaders.length / 2 > opts.maxHeaders || manager.closing) return false;
    if (opts.loopbackOnly) {
      const host = plainHostname(req);
      if (host === null || !isLoopback(host)) return false;
    }
    const t = targetOf(req, manager);
    if (!t || !manager.knows(t.target)) return false;
    // serve() answers every failure of the request itself; this catches only a fault of its own.
    serve(req, res, t.target, t.route).catch((err: unknown) => {
      log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
      res.destroy();
    });
    return true;
  };
}
