import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type Koa from 'koa';
import type { ListenAddress } from '../config/types';
import { configError, MmeError } from '../errors';
import { kDefaultLimits, type ListenerLimits } from '../util/listener-limits';
import type { TlsFiles } from '../util/tls-files';

/** Node's 2000 is far beyond any real client; fewer bounds per-request parsing work. */
export const kMaxHeadersCount = 100;
/** Node's own period for enforcing the header and request timeouts; shorter timeouts get a shorter period. */
const kCheckIntervalMs = 30_000;

/** The whole answer to CONNECT, which never reaches the app. */
const kConnectRefused = (() => {
  const body = JSON.stringify(
    new MmeError('MME_ERR_METHOD_NOT_ALLOWED', 'CONNECT is not supported: this is not a proxy.').toBody(),
  );
  return `HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD, POST, PUT, DELETE\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
})();

/**
 * The whole answer to a plain-text HTTP request on an https:// listener, which OpenSSL recognizes
 * in place of a ClientHello: a client that forgot the s gets one line saying so, not an empty reply.
 */
const kUseHttps = (() => {
  const body = 'This port speaks HTTPS (TLS): send the request to https://, not http://\n';
  return `HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
})();

/** tlsClientError's socket is the TLS wrapper, already destroyed; the TCP one under it (`_parent`) is open. */
function answerPlainHttp(err: NodeJS.ErrnoException, socket: TLSSocket): void {
  const tcp = (socket as TLSSocket & { _parent?: Duplex })._parent;
  if (err.code === 'ERR_SSL_HTTP_REQUEST' && tcp?.writable) tcp.end(kUseHttps);
}

export interface Listener {
  server: http.Server;
  address: string;
  port: number;
  close(): Promise<void>;
}

/** Koa's callback never rejects (errors go through ctx.onerror and the app's 'error' event). */
export function koaListener(app: Koa): http.RequestListener {
  const handle = app.callback();
  return (req, res) => {
    void handle(req, res);
  };
}

/** A certificate reload applies to the connections that come after it. */
export async function listen(
  handler: http.RequestListener,
  addr: ListenAddress,
  limits: Partial<ListenerLimits> = {},
  tls: TlsFiles | null = null,
): Promise<Listener> {
  const l = { ...kDefaultLimits, ...limits };
  const options: http.ServerOptions = {
    keepAliveTimeout: l.keepAliveTimeoutMs,
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(kCheckIntervalMs, l.headersTimeoutMs / 2),
  };
  let server: http.Server;
  if (addr.scheme === 'https') {
    if (tls === null) throw configError(`${addr.raw} is https:// but tls_cert_file is not set`);
    const secure = https.createServer({ ...options, ...tls.context, ...tls.peerOptions(l.headersTimeoutMs) }, handler);
    secure.on('tlsClientError', answerPlainHttp);
    secure.once(
      'close',
      tls.onChange((context) => secure.setSecureContext(context)),
    );
    server = secure;
  } else {
    server = http.createServer(options, handler);
  }
  // Node drops headers past this count silently; one more than allowed lets the app refuse "too many" (431).
  server.maxHeadersCount = kMaxHeadersCount + 1;
  server.maxConnections = l.maxConnections;
  // Node hands CONNECT to 'connect' listeners, and with none drops the socket without a word.
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => socket.end(kConnectRefused));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    if (addr.scheme === 'unix') server.listen(addr.path, resolve);
    else server.listen(addr.port, addr.host, resolve);
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound ? bound.port : 0;
  return {
    server,
    port,
    address: addr.scheme === 'unix' ? addr.path : `${addr.scheme}://${addr.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
