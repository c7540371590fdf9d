/**
 * What a door hands the gateway: its wire decoded into a DoorRequest, and the listener's guard that
 * sees every request first. A loopback listener serves only loopback hosts (a DNS-rebinding page
 * sends its own domain); a foreign Origin may not change state (a cross-site "simple" POST needs no
 * preflight); inference_token guards the data plane, the health checks excepted. Nothing here names
 * a type of the server's (.dependency-cruiser.cjs): no JobOptions or InvokeResult reaches a door.
 */
import { MmeError } from '../errors';
import type { ResponseHead } from '../model-types';
import { isLoopback } from '../util/loopback';
import type { InferenceToken } from './bearer-tokens';

export type Headers = Readonly<Record<string, string | string[] | undefined>>;

export interface ModelAnswer extends ResponseHead {
  body: Buffer;
}

/** A piece of a streamed answer; the first carries the head. */
export type AnswerChunk = Partial<Pick<ModelAnswer, 'body'>> & { head?: ResponseHead };

/** An AbortSignal, or a door's cheaper own (an AbortController and its listener cost microseconds a request). */
export interface DoorSignal {
  readonly aborted: boolean;
  onabort: ((event: Event) => unknown) | null;
}

/** What a request sends its model, as the model's handler reads it (context.requests[i]). */
export interface Payload {
  /** Lower-case names; a worker gets them only for a custom handler, which may read them. */
  headers: Headers;
  /** One buffer, or the pieces the client's socket delivered: they go to the worker back to back, never joined. */
  body: Buffer | readonly Buffer[];
  contentType: string;
  /** None or * / * is SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT, as in SageMaker's inference toolkit. */
  accept: string | undefined;
  stream?: boolean;
  /** An OIP request's parameters.timeout (microseconds) and .priority, which its door read from its own encoding. */
  oipControls?: { timeout?: unknown; priority?: unknown };
}

/** An OIP inference: a JSON header of `oipHeaderLength` bytes (its parameters.timeout and .priority the gateway's to read), then the binary tensors it names. */
export type OipPayload = Pick<Payload, 'headers'> & { body: readonly Buffer[]; oipHeaderLength: number };

/**
 * A request as its door decoded it. The gateway asks for each part when it is due: the knock for
 * the guard, target() past it, body() past the target and the controls (a 401 or a 404 reads no
 * body), then answer() or fail(), once.
 */
export interface DoorRequest {
  readonly requestId: string;
  readonly guard: DoorGuard;
  /** May throw a refusal of the door's own that comes first (HTTP's 431). */
  readonly knock: Knock;
  /** Read before the guard, so that a refusal joins its caller's trace. */
  readonly headers: Headers;
  /** The call in the error line, never client text. */
  readonly where: string;
  readonly signal: DoorSignal;
  /** X-Request-Timeout (milliseconds) and X-Request-Priority as sent. */
  readonly timeout?: unknown;
  readonly priority?: unknown;
  /** The transport's own deadline, milliseconds from now (gRPC's grpc-timeout). */
  readonly deadlineMs?: number;
  /** The model's name, or null for a request the door answers without one (answer(null)); throws the door's own refusals (405, a model version). */
  target(): string | null;
  body(): Payload | OipPayload | Promise<Payload | OipPayload>;
  /** A streamed answer's pieces (not OIP's): the handler sends the next once `delivered`. */
  onChunk?(chunk: AnswerChunk, delivered: () => void): void;
  answer(answer: ModelAnswer | null): void;
  /** Answers the failure; returns its status as the client sees it, for the error line. */
  fail(e: MmeError): string | number;
}

export type Transport = 'http' | 'grpc';

export interface Knock {
  /** The HTTP request target or the gRPC method: the health checks (kHealthChecks) are open. */
  operation: string;
  /** Host or :authority, as sent. */
  host: string | undefined;
  authorization: string | undefined;
  dataPlane: boolean;
  /** HTTP only, for the cross-site check. */
  method?: string;
  origin?: string;
}

export function pathOf(url: string): string | null {
  try {
    return new URL(url, 'http://h').pathname;
  } catch {
    return null;
  }
}

/** Host or :authority without its port: the first of a list, an IPv6 address in its brackets. */
function hostOf(authority: string): string {
  const first = authority.split(',', 1)[0].trim();
  return /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(first)?.[1] ?? first;
}

/** Open without inference_token. The HTTP target is parsed only here, when a token is set: a URL costs microseconds. */
const kHealthChecks: Record<Transport, (operation: string) => boolean> = {
  http: (target) => /^\/(ping|v2\/health\/(live|ready))\/?$/i.test(pathOf(target) ?? target),
  grpc: (method) => /^(Ping|ServerLive|ServerReady)$/.test(method),
};

const kWords: Record<Transport, { credential: 'Authorization header' | 'authorization metadata'; loopback: string }> = {
  http: {
    credential: 'Authorization header',
    loopback:
      'This listener is bound to a loopback address and serves only requests whose Host is localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding). To serve other hosts, listen on their address (e.g. http://0.0.0.0:8080).',
  },
  grpc: {
    credential: 'authorization metadata',
    loopback:
      'This gRPC listener is bound to a loopback address and serves only calls whose :authority is localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding). To serve other hosts, set grpc_inference_address to their address (e.g. 0.0.0.0).',
  },
};

const kCrossSite =
  'A request that changes state is not accepted from another site: its Origin header names a page that is not this server. Send it without an Origin (from a server, curl or an SDK), not from a browser page.';

const kSafeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * No Origin (only a browser sends one) or the server's own may change state: a page elsewhere can
 * send a CORS "simple" POST from a browser on this network, which the Host guard does not see.
 */
function originAllowed(k: Knock): boolean {
  if (k.origin === undefined || kSafeMethods.has(k.method ?? '')) return true;
  try {
    return k.host !== undefined && new URL(k.origin).host === new URL(`http://${k.host}`).host;
  } catch {
    return false; // "null" (a sandboxed or file: page) or anything unparseable
  }
}

export interface DoorGuardOptions {
  transport: Transport;
  loopbackOnly: boolean;
  /** null = none set, or a management-only listener. */
  inferenceToken: InferenceToken | null;
}

export class DoorGuard {
  constructor(
    /** During shutdown every request is 503: a 404 would tell SageMaker the model is gone from this host. */
    private readonly server: { readonly closing: boolean },
    private readonly opts: DoorGuardOptions,
  ) {}

  /** Throws the refusal (503, 403, 401), in that order. */
  check(k: Knock): void {
    if (this.server.closing)
      throw new MmeError('MME_ERR_SHUTTING_DOWN', 'The server is shutting down; send the request to another instance.');
    const words = kWords[this.opts.transport];
    if (this.opts.loopbackOnly && !isLoopback(hostOf(k.host ?? '')))
      throw new MmeError('MME_ERR_FORBIDDEN', words.loopback);
    if (!originAllowed(k)) throw new MmeError('MME_ERR_FORBIDDEN', kCrossSite);
    if (this.opts.inferenceToken !== null && k.dataPlane && !kHealthChecks[this.opts.transport](k.operation))
      this.opts.inferenceToken.check(k.authorization, words.credential);
  }
}
