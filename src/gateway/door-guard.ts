/**
 * Who may call what, whichever door a request came through: one guard per listener, run before
 * any work. During shutdown every request is refused (admit); a listener on a loopback address
 * serves only requests that name a loopback host (a DNS-rebinding page in a browser sends its own
 * domain); a request that changes state and carries a foreign Origin is refused (a cross-site
 * page's "simple" POST needs no preflight); with inference_token set, the data plane needs one of
 * its tokens, the health checks excepted. A door reads these facts off its wire (Knock) and
 * answers the MmeError this throws.
 */
import { MmeError } from '../errors';
import { isLoopback } from '../util/loopback';
import type { InferenceToken } from './bearer-tokens';

export type Transport = 'http' | 'grpc';

/** What a door read off a request for its guard. */
export interface Knock {
  /** The HTTP request target or the gRPC method: the health checks (kHealthChecks) are open. */
  operation: string;
  /** The host the client named (Host or :authority), without its port. */
  host: string;
  authorization: string | undefined;
  /** The request is for the data plane, which inference_token guards. */
  dataPlane: boolean;
  /** HTTP only: the method, Origin and whole Host, for the cross-site check. */
  method?: string;
  origin?: string;
  hostHeader?: string;
}

/** An HTTP request target's path; null when it does not parse. */
export function pathOf(url: string): string | null {
  try {
    return new URL(url, 'http://h').pathname;
  } catch {
    return null;
  }
}

/**
 * The health checks, open without inference_token: SageMaker's /ping and TorchServe's Ping, OIP's
 * liveness and readiness, as each door spells them. The HTTP target is parsed only here, when a
 * token is set: a URL costs microseconds a request.
 */
const kHealthChecks: Record<Transport, (operation: string) => boolean> = {
  http: (target) => /^\/(ping|v2\/health\/(live|ready))\/?$/i.test(pathOf(target) ?? target),
  grpc: (method) => /^(Ping|ServerLive|ServerReady)$/.test(method),
};

/** What each door's refusals tell its client to change. */
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

/** Methods a browser sends cross-site only after a preflight, or that change nothing. */
const kSafeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request may change state given its Origin: no Origin (curl, SDKs, SageMaker, gRPC:
 * nothing but a browser sends one), or the server's own (scheme://host:port equal to the request's
 * Host). A page elsewhere can still send a CORS "simple" request (POST with text/plain or a form
 * body) from a browser on this machine or network, and the Host guard alone does not see it.
 */
export function originAllowed(
  method: string | undefined,
  origin: string | undefined,
  host: string | undefined,
): boolean {
  if (origin === undefined || kSafeMethods.has(method ?? '')) return true;
  try {
    return host !== undefined && new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false; // "null" (a sandboxed or file: page) or anything unparseable
  }
}

export interface DoorGuardOptions {
  transport: Transport;
  /** The listener is on a loopback address. */
  loopbackOnly: boolean;
  /** inference_token on this listener's data plane; null = none set, or a management-only listener. */
  inferenceToken: InferenceToken | null;
}

export class DoorGuard {
  constructor(
    private readonly admit: () => void,
    private readonly opts: DoorGuardOptions,
  ) {}

  /** Throws the refusal (503, 403, 401) for `k`, in that order; nothing for a request that may pass. */
  check(k: Knock): void {
    this.admit();
    const words = kWords[this.opts.transport];
    if (this.opts.loopbackOnly && !isLoopback(k.host)) throw new MmeError('MME_ERR_FORBIDDEN', words.loopback);
    if (!originAllowed(k.method, k.origin, k.hostHeader)) throw new MmeError('MME_ERR_FORBIDDEN', kCrossSite);
    if (this.opts.inferenceToken !== null && k.dataPlane && !kHealthChecks[this.opts.transport](k.operation))
      this.opts.inferenceToken.check(k.authorization, words.credential);
  }
}
