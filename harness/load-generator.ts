/** autocannon against one invoke route, reduced to what the hardening cases assert on. */
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
}

/** POSTs `body` as JSON to `url` from `connections` connections for `seconds`. */
export async function hammer(url: string, body: unknown, o: HammerOptions): Promise<Hammered> {
  const r = await autocannon({
    url, method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' },
    connections: o.connections, duration: o.seconds, timeout: o.timeoutSeconds ?? 10,
  });
  const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]));
  return { p50: r.latency.p50, p97_5: r.latency.p97_5, p99: r.latency.p99, rps: r.requests.average, statuses, non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts };
}
