/**
 * Who may call what, whichever door: one guard per listener, run before any work. A loopback
 * listener serves only loopback hosts (a DNS-rebinding page sends its own domain); a foreign Origin
 * may not change state (a cross-site "simple" POST needs no preflight); inference_token guards the
 * data plane, the health checks excepted.
 */
import { MmeError } from '../errors';
import { isLoopback } from '../util/loopback';
import type { InferenceToken } from './bearer-tokens';

export type Transport = 'http' | 'grpc';

export interface Knock {
  /** The HTTP request target or the gRPC method: the health checks (kHealthChecks) are open. */
  operation: string;
  /** Host or :authority, without its port. */
  host: string;
  authorization: string | undefined;
  dataPlane: boolean;
  /** HTTP only, for the cross-site check. */
  method?: string;
  origin?: string;
  hostHeader?: string;
}

export function pathOf(url: string): string | null {
  try {
    return new URL(url, 'http://h').pathname;
  } catch {
    return null;
  }
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
  loopbackOnly: boolean;
  /** null = none set, or a management-only listener. */
  inferenceToken: InferenceToken | null;
}

export class DoorGuard {
  constructor(
    private readonly admit: () => void,
    private readonly opts: DoorGuardOptions,
  ) {}

  /** Throws the refusal (503, 403, 401), in that order. */
  check(k: Knock): void {
    this.admit();
    const words = kWords[this.opts.transport];
    if (this.opts.loopbackOnly && !isLoopback(k.host)) throw new MmeError('MME_ERR_FORBIDDEN', words.loopback);
    if (!originAllowed(k.method, k.origin, k.hostHeader)) throw new MmeError('MME_ERR_FORBIDDEN', kCrossSite);
    if (this.opts.inferenceToken !== null && k.dataPlane && !kHealthChecks[this.opts.transport](k.operation))
      this.opts.inferenceToken.check(k.authorization, words.credential);
  }
}
