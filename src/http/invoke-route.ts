/**
 * The invoke routes (invoke-paths.ts) straight from node:http to the gateway: no Koa context, no
 * middleware, a handful of objects a request; refusals included, every request on an invoke path
 * is answered here. A streamed chunk is acknowledged to the worker only once the client's socket
 * took it: a client that stops reading stops the handler instead of filling this process.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MmeError, quote } from '../errors';
import type { AnswerChunk, DoorRequest, DoorSignal, ModelAnswer, OipPayload, Payload } from '../gateway/door';
import { newRequestId, type Gateway } from '../gateway/gateway';
import type { ModelRegistry } from '../gateway/models';
import { checkVersion } from '../gateway/oip/model-metadata';
import type { ResponseHead } from '../model-types';
import { HEADER_LENGTH_HEADER, headerLengthOf } from '../oip/binary-body';
import { readBodyChunks } from './body';
import { errorBodyText, methodNotAllowed } from './error-response';
import { closeOnShutdown, knockOf, type ListenerGuards } from './guards';
import { invocationsTarget, invokePath, type InvokePath } from './invoke-paths';
import { accessLine } from './request-id';

const kCustomAttributes = 'x-amzn-sagemaker-custom-attributes';
/** Statuses whose answers carry no body (RFC 9110 §15.3.5, §15.3.6, §15.4.5). */
const kNoBody = new Set([204, 205, 304]);
/** Types read as UTF-8 text unless they say otherwise. */
const kTextual = /^(text\/[^;\s]+|application\/json|application\/javascript)$/;

/** "; charset=utf-8" added to text and JSON types that name none; octet-stream for no media type. */
function answerType(type: string): string {
  const essence = type.split(';', 1)[0].trim().toLowerCase();
  if (!essence.includes('/')) return 'application/octet-stream';
  return kTextual.test(essence) && !/charset=/i.test(type) ? `${type}; charset=utf-8` : type;
}

export interface InvokeRouteOptions {
  gateway: Gateway;
  registry: Pick<ModelRegistry, 'registered' | 'onlyModel' | 'servingCount'>;
  guards: ListenerGuards;
  maxRequestSize: number;
  accessLog: ((line: string) => void) | null;
  log: (line: string) => void;
}

/** One request on an invoke path as the gateway's request; it is its own client signal (the socket closing). */
class HttpInvoke implements DoorRequest, DoorSignal {
  readonly requestId = newRequestId();
  readonly #t0 = performance.now();
  /** Past the method check: error lines name the route from then on. */
  #routed = false;
  readonly signal: DoorSignal = this;
  aborted = false;
  onabort: DoorSignal['onabort'] = null;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly at: InvokePath,
    private readonly opts: InvokeRouteOptions,
  ) {
    res.setHeader('x-request-id', this.requestId);
  }

  get guard() {
    return this.opts.guards.door;
  }
  get knock() {
    return knockOf(this.req, this.res, this.opts.guards, true);
  }
  get headers() {
    return this.req.headers;
  }
  get where() {
    return this.#routed ? `POST ${this.at.route}` : `${this.req.method} -`;
  }
  get timeout() {
    return this.req.headers['x-request-timeout'];
  }
  get priority() {
    return this.req.headers['x-request-priority'];
  }

  /** OPTIONS asks which methods the path takes: an empty 200 with Allow, as the router answered it. */
  target(): string | null {
    const { req, at } = this;
    if (req.method === 'OPTIONS') return null;
    if (req.method !== 'POST') throw methodNotAllowed();
    this.#routed = true;
    if (at.oip) checkVersion(at.name!, at.version);
    return at.name ?? invocationsTarget(req.headers, at.query, this.opts.registry);
  }

  /** The OIP body goes to the worker as it came, a JSON header and any binary tensors. */
  async body(): Promise<Payload | OipPayload> {
    const { req, res } = this;
    const body = await readBodyChunks(this, this.opts.maxRequestSize);
    res.on('close', () => {
      if (!res.writableFinished && !this.aborted) {
        this.aborted = true;
        this.onabort?.(new Event('abort'));
      }
    });
    // Node's own header object: copied into the frame only for a custom handler, which may read it.
    const headers = req.headers;
    if (!this.at.oip) return { headers, body, contentType: headers['content-type'] ?? '', accept: headers.accept };
    const declared = headers[HEADER_LENGTH_HEADER] as string | undefined;
    // A value that is not a byte count must not fall back to "the whole body is the header".
    if (declared && !/^\d{1,15}$/.test(declared)) {
      throw new MmeError(
        'MME_ERR_INVALID_INPUT',
        `${HEADER_LENGTH_HEADER} is ${quote(declared)}; set it to the byte length of the JSON inference header (a decimal number), or leave it out when the body is JSON only`,
      );
    }
    const oipHeaderLength = declared
      ? Number(declared)
      : (headerLengthOf(headers['content-type'] ?? '') ?? body.reduce((n, b) => n + b.length, 0));
    return { headers, body, oipHeaderLength };
  }

  onChunk(chunk: AnswerChunk, delivered: () => void): void {
    if (chunk.head) this.#head(chunk.head);
    this.res.write(chunk.body!, delivered);
  }

  answer(a: ModelAnswer | null): void {
    const { res } = this;
    if (a === null) {
      res.setHeader('Allow', 'POST');
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      return this.#send('');
    }
    // Streamed: the head and the chunks are out.
    if (res.headersSent) return this.#send(a.body);
    if (!this.at.oip) this.#head(a);
    else {
      // A JSON header alone is JSON; with binary outputs after it, the header's length says where it ends.
      const answerHeader = headerLengthOf(a.contentType);
      const binary = answerHeader !== null && answerHeader !== a.body.length;
      this.#head(a, answerHeader === null ? a.contentType : binary ? 'application/octet-stream' : 'application/json');
      if (binary) res.setHeader(HEADER_LENGTH_HEADER, String(answerHeader));
    }
    this.#send(a.body);
  }

  fail(e: MmeError): number {
    const { req, res } = this;
    closeOnShutdown(req, res, e);
    // Streamed: the head and some chunks are out, and an unfinished chunked body is the only
    // failure signal left.
    if (res.headersSent) {
      res.destroy();
      this.#send(null);
      return e.status;
    }
    res.statusCode = e.status;
    for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    this.#send(errorBodyText(e, this.at.path));
    return e.status;
  }

  /** An OIP answer's type is its own; an invoke's echoes the request's custom attributes unless the handler set its own. */
  #head(head: ResponseHead, oipType?: string): void {
    const { res } = this;
    res.statusCode = head.status;
    for (const [k, v] of Object.entries(head.headers)) res.setHeader(k, v);
    res.setHeader('Content-Type', answerType(oipType ?? head.contentType));
    const echoed = this.req.headers[kCustomAttributes];
    if (oipType === undefined && echoed !== undefined && head.headers[kCustomAttributes] === undefined)
      res.setHeader(kCustomAttributes, echoed);
  }

  /**
   * Ends the response with `body` (null: it is out already, or destroyed): nothing is written to a
   * client that is gone, and a status without a body gets none.
   */
  #send(body: Buffer | string | null): void {
    const { req, res, opts } = this;
    opts.accessLog?.(accessLine(req, res.statusCode, performance.now() - this.#t0, this.requestId));
    if (body === null) return;
    if (res.headersSent || res.writableEnded || (res.socket !== null && !res.socket.writable))
      return void res.end(res.headersSent ? body : undefined);
    if (kNoBody.has(res.statusCode)) {
      for (const h of ['Content-Type', 'Content-Length', 'Transfer-Encoding']) res.removeHeader(h);
      return void res.end();
    }
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  }
}

/** Takes a request on an invoke path (true) or leaves it to Koa (false). */
export function invokeRoute(opts: InvokeRouteOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const at = invokePath(req.url ?? '');
    if (!at) return false;
    // handle() answers every failure of the request itself; this catches only a fault of the door's.
    opts.gateway.handle(new HttpInvoke(req, res, at, opts)).catch((err: unknown) => {
      opts.log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
      res.destroy();
    });
    return true;
  };
}
