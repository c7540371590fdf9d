/**
 * T-H5 keepalive_idle_race: a pooling client sends one request, waits about the server's
 * keepAliveTimeout, sends the next, and so on. A load balancer whose idle timeout is shorter than
 * the server's reuses the connection every time; a client that honours the server's
 * "Keep-Alive: timeout=N" hint lets it go just before the server would. Neither may ever write
 * onto a connection the server is closing (ECONNRESET, "socket hang up").
 */
import http from 'node:http';

export interface KeepAliveOptions {
  url: string;
  /** The gaps between requests, repeated in turn until `requests` have been sent. */
  gapsMs: number[];
  requests: number;
  /**
   * The client's own idle timeout. Node's agent honours the server's hint only when it has one;
   * null = none (it keeps a connection until the server closes it).
   */
  clientIdleTimeoutMs: number | null;
}

export interface KeepAliveResult {
  /** Requests that went out on a connection an earlier request had used. */
  reused: number;
  errors: string[];
}

function get(url: string, agent: http.Agent): Promise<{ reused: boolean; error?: string }> {
  return new Promise((resolve) => {
    const req = http.get(`${url}/ping`, { agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ reused: req.reusedSocket, ...(res.statusCode === 200 ? {} : { error: `status ${res.statusCode}` }) }),
      );
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ reused: req.reusedSocket, error: err.code ?? err.message }),
    );
  });
}

export async function runKeepAlive(o: KeepAliveOptions): Promise<KeepAliveResult> {
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: 1,
    ...(o.clientIdleTimeoutMs === null ? {} : { timeout: o.clientIdleTimeoutMs }),
  });
  const result: KeepAliveResult = { reused: 0, errors: [] };
  try {
    for (let i = 0; i < o.requests; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, o.gapsMs[(i - 1) % o.gapsMs.length]));
      const r = await get(o.url, agent);
      if (r.reused) result.reused++;
      if (r.error) result.errors.push(`request ${i + 1}: ${r.error}`);
    }
  } finally {
    agent.destroy();
  }
  return result;
}

/**
 * Both clients at once against a server whose keepAliveTimeout is `keepAliveTimeoutMs`: one that
 * honours its hint, sending every keepAliveTimeout ± 1 s, and a load balancer idling out 1 s before
 * the server, sending every keepAliveTimeout − 1 s, which must reuse its one connection throughout.
 */
export async function keepAliveProblems(url: string, keepAliveTimeoutMs: number, requests: number): Promise<string[]> {
  const [hinted, balancer] = await Promise.all([
    runKeepAlive({
      url,
      gapsMs: [keepAliveTimeoutMs - 1000, keepAliveTimeoutMs + 1000],
      requests,
      clientIdleTimeoutMs: 10 * keepAliveTimeoutMs,
    }),
    runKeepAlive({ url, gapsMs: [keepAliveTimeoutMs - 1000], requests, clientIdleTimeoutMs: null }),
  ]);
  return [
    ...hinted.errors.map((e) => `client honouring the hint, ${e}`),
    ...balancer.errors.map((e) => `load balancer, ${e}`),
    ...(balancer.reused === requests - 1
      ? []
      : [`the load balancer reused its connection ${balancer.reused} times in ${requests - 1}`]),
  ];
}
