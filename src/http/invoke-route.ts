/**
 * The invoke routes (invoke-paths.ts) straight from node:http through the gateway: no Koa context,
 * no middleware, a handful of objects a request; refusals included, every request on an invoke
 * path is answered here. A streamed chunk is acknowledged to the worker only once the client's
 * socket took it: a client that stops reading stops the handler instead of filling this process.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MmeError, quote } from '../errors';
import type { Gateway, Invocation, ModelAnswer, ModelRequest, RunOptions } from '../gateway/gateway';
import type { ModelManager } from '../gateway/models';
import { checkVersion } from '../gateway/oip/model-metadata';
import { oipControls, oipRequest } from '../gateway/oip/infer-request';
import { HEADER_LENGTH_HEADER, headerLengthOf } from '../oip/binary-body';
import { send, setAnswerHead, setErrorHead } from './answer';
import { readBodyChunks } from './body';
import { methodNotAllowed } from './error-response';
import { refuse, type ListenerGuards } from './guards';
import { invocationsTarget, invokePath, type InvokePath } from './invoke-paths';
import { accessLine } from './request-id';

const kCustomAttributes = 'x-amzn-sagemaker-custom-attributes';
const kTimeout = 'x-request-timeout';
const kPriority = 'x-request-priority';

export interface InvokeRouteOptions {
  gateway: Gateway;
  manager: Pick<ModelManager, 'registered' | 'onlyModel' | 'servingCount'>;
  guards: ListenerGuards;
  maxRequestSize: number;
  accessLog: ((line: string) => void) | null;
  log: (line: string) => void;
}

/** Takes a request on an invoke path (true) or leaves it to Koa (false). */
export type InvokeRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

function abortOnClientClose(res: ServerResponse, inv: Invocation): void {
  res.on('close', () => {
    if (!res.writableFinished) inv.abort();
  });
}

type Http = { req: IncomingMessage; res: ServerResponse };

function askFromHeaders(req: IncomingMessage, inv: Invocation): void {
  const timeout = req.headers[kTimeout];
  if (timeout !== undefined) inv.askTimeout(timeout, 'X-Request-Timeout');
  const priority = req.headers[kPriority];
  if (priority !== undefined) inv.askPriority(priority, 'X-Request-Priority');
}

/** The body of a request's answer, or null when it is already out (streamed). */
type Answer = Buffer | string | null;

export function invokeRoute(opts: InvokeRouteOptions): InvokeRoute {
  const { gateway, guards, log, accessLog } = opts;

  const invoke = async (http: Http, at: InvokePath, inv: Invocation): Promise<Answer> => {
    const { req, res } = http;
    inv.target(at.name ?? invocationsTarget(req.headers, at.query, opts.manager));
    askFromHeaders(req, inv);
    const body = await readBodyChunks(http, opts.maxRequestSize);
    // Node's own header object: copied into the frame only for a custom handler, which may read it.
    const headers = req.headers;
    const customAttributes = headers[kCustomAttributes] as string | undefined;
    // The request's custom attributes are echoed unless the handler set its own.
    const setHead = (head: { status: number; headers: Record<string, string>; contentType: string }) => {
      setAnswerHead(res, head.status, head.headers, head.contentType);
      if (customAttributes !== undefined && head.headers[kCustomAttributes] === undefined)
        res.setHeader(kCustomAttributes, customAttributes);
    };
    const onChunk: RunOptions['onChunk'] = (chunk, delivered) => {
      if (chunk.head) setHead(chunk.head);
      res.write(chunk.body!, delivered);
    };
    const request: ModelRequest = {
      requestId: inv.requestId,
      contentType: headers['content-type'] ?? '',
      accept: gateway.accept(headers.accept),
      headers,
      body,
    };
    let result: ModelAnswer;
    try {
      abortOnClientClose(res, inv);
      result = await inv.run(request, { onChunk });
    } catch (err) {
      // The head and some chunks are out: an unfinished chunked body is the only failure signal left.
      if (res.headersSent) res.destroy();
      throw err;
    }
    if (res.headersSent) {
      res.end(result.body);
      return null;
    }
    setHead(result);
    return result.body;
  };

  /** The OIP body goes to the worker as it came, a JSON header and any binary tensors. */
  const infer = async (http: Http, at: InvokePath, inv: Invocation): Promise<Answer> => {
    const { req, res } = http;
    const name = at.name!;
    checkVersion(name, at.version);
    inv.target(name);
    askFromHeaders(req, inv);
    const body = await readBodyChunks(http, opts.maxRequestSize);
    const declared = req.headers[HEADER_LENGTH_HEADER] as string | undefined;
    // A value that is not a byte count must not fall back to "the whole body is the header".
    if (declared && !/^\d{1,15}$/.test(declared)) {
      throw new MmeError(
        'MME_ERR_INVALID_INPUT',
        `${HEADER_LENGTH_HEADER} is ${quote(declared)}; set it to the byte length of the JSON inference header (a decimal number), or leave it out when the body is JSON only`,
      );
    }
    const headerLength = declared
      ? Number(declared)
      : (headerLengthOf(req.headers['content-type'] ?? '') ?? body.reduce((n, b) => n + b.length, 0));
    inv.askOip(oipControls(body, headerLength));
    abortOnClientClose(res, inv);
    const result = await inv.run(oipRequest(inv.requestId, body, headerLength, req.headers), {});
    // A JSON header alone is JSON; with binary outputs after it, the header's length says where it ends.
    const answerHeader = headerLengthOf(result.contentType);
    const binary = answerHeader !== null && answerHeader !== result.body.length;
    setAnswerHead(
      res,
      result.status,
      result.headers,
      answerHeader === null ? result.contentType : binary ? 'application/octet-stream' : 'application/json',
    );
    if (binary) res.setHeader(HEADER_LENGTH_HEADER, String(answerHeader));
    return result.body;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, at: InvokePath): Promise<void> => {
    const inv = gateway.invocation();
    const t0 = performance.now();
    res.setHeader('x-request-id', inv.requestId);
    // Refusals before the route name no route in their error line.
    let where = `${req.method} -`;
    let answer: Answer;
    let refused: unknown;
    try {
      inv.traceFrom(req.headers);
      refuse(req, res, guards, true);
      // OPTIONS asks which methods the path takes: an empty 200 with Allow, as the router answered it.
      if (req.method === 'OPTIONS') {
        res.setHeader('Allow', 'POST');
        res.setHeader('Content-Type', 'text/plain; charset=utf-8');
        answer = '';
      } else {
        if (req.method !== 'POST') throw methodNotAllowed();
        where = `POST ${at.route}`;
        answer = await (at.oip ? infer : invoke)({ req, res }, at, inv);
      }
    } catch (err) {
      refused = err;
      const e = gateway.failure(err, inv.requestId, where);
      // Streamed: the connection was destroyed, the client sees the chunked body cut off.
      answer = res.headersSent ? null : setErrorHead(res, e, at.path);
    }
    inv.finish(refused);
    accessLog?.(accessLine(req, res.statusCode, performance.now() - t0, inv.requestId));
    if (answer !== null) send(res, answer);
  };

  return (req, res) => {
    const at = invokePath(req.url ?? '');
    if (!at) return false;
    // serve() answers every failure of the request itself; this catches only a fault of its own.
    serve(req, res, at).catch((err: unknown) => {
      log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
      res.destroy();
    });
    return true;
  };
}
