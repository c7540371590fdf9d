import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import type { ListenAddress } from '../config/types';

/**
 * Connection limits: keep-alive outlives load balancers' 60 s idle timeout (so they close first
 * and never race a reused socket); a request must finish arriving within requestTimeout (SageMaker's
 * 60 s plus a 6 MB upload; slowloris bound), its headers sooner. Passed to createServer, which
 * checks headersTimeout <= requestTimeout (setting them afterwards skips that check).
 */
const kKeepAliveTimeoutMs = 65_000;
const kHeadersTimeoutMs = 60_000;
const kRequestTimeoutMs = 70_000;
/** Node's 2000 is far beyond any real client; fewer bounds per-request parsing work. */
const kMaxHeadersCount = 100;

export interface Listener {
  server: http.Server;
  /** The bound port (useful with port 0) or the socket path. */
  address: string;
  port: number;
  close(): Promise<void>;
}

export async function listen(app: Koa, addr: ListenAddress, maxConnections = 1024): Promise<Listener> {
  if (addr.scheme === 'https') throw new Error(`https listeners are not supported yet (${addr.raw}); terminate TLS in front of the container`);
  const server = http.createServer({ keepAliveTimeout: kKeepAliveTimeoutMs, headersTimeout: kHeadersTimeoutMs, requestTimeout: kRequestTimeoutMs }, app.callback());
  server.maxHeadersCount = kMaxHeadersCount;
  server.maxConnections = maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (addr.scheme === 'unix') server.listen(addr.path, resolve);
    else server.listen(addr.port, addr.host, resolve);
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound ? (bound as AddressInfo).port : 0;
  return {
    server,
    port,
    address: addr.scheme === 'unix' ? addr.path : `http://${addr.host}:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    }),
  };
}
