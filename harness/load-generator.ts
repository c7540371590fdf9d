/**
 * The load generator of the benches and the hardening runs: autocannon POSTing one body to one
 * route, reduced to the figures they compare and assert on.
 */
import autocannon from 'autocannon';

export interface Hammered {
  /** Latency percentiles, ms. */
  p50: number;
  p97_5: number;
  p99: number;
  /** Mean requests per second. */
  rps: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
}

export interface HammerOptions {
  connections: number;
  seconds: number;
  /** A request not answered within this many seconds counts as a timeout (autocannon's default is 10). */
  timeoutSeconds?: number;
  /** Of `body`; application/json unless given. */
  contentType?: string;
  /** Each request's path, drawn afresh (default: the path of `url`). */
  pathOf?: () => string;
  /** Headers every request carries besides its content type (a bearer token, a deadline). */
  headers?: Record<string, string>;
}

/** POSTs `body` to `url` from `connections` connections for `seconds`, one request at a time on each. */
export async function hammer(url: string, body: string | Buffer, o: HammerOptions): Promise<Hammered> {
  const pathOf = o.pathOf;
  const r = await autocannon({
    url,
    method: 'POST',
    body,
    headers: { 'content-type': o.contentType ?? 'application/json', ...o.headers },
    connections: o.connections,
    duration: o.seconds,
    timeout: o.timeoutSeconds ?? 10,
    pipelining: 1,
    ...(pathOf ? { requests: [{ setupRequest: (req) => ({ ...req, path: pathOf() }) }] } : {}),
  });
  const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]));
  return {
    p50: r.latency.p50,
    p97_5: r.latency.p97_5,
    p99: r.latency.p99,
    rps: r.requests.average,
    statuses,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
  };
}
