/**
 * The bounds every listener keeps (HTTP, HTTPS and gRPC alike), so that a client without a token
 * cannot hold more of the server than these: connections, the time a connection may take to
 * become a request, the time it may sit idle, and for gRPC the calls it may hold open.
 */
export interface ListenerLimits {
  /** Most open client connections per listener; more are closed at once. */
  maxConnections: number;
  /** An idle connection (HTTP keep-alive; gRPC with no call open) is closed after this. */
  keepAliveTimeoutMs: number;
  /** Headers must arrive within this; it also bounds a TLS handshake. */
  headersTimeoutMs: number;
  /** A whole request must arrive within this; for gRPC, a call's first message after its headers. */
  requestTimeoutMs: number;
  /** gRPC calls one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxStreamsPerConnection: number;
  /** gRPC calls in flight over all connections; one more is RESOURCE_EXHAUSTED. */
  maxStreams: number;
}

/**
 * Keep-alive outlives load balancers' 60 s idle timeout (so they close first and never race a
 * reused socket); a request must finish arriving within requestTimeout (SageMaker's 60 s plus a
 * 6 MB upload; slowloris bound), its headers, or its TLS handshake, sooner. gRPC's 100 calls per
 * connection is what gRPC's C++ and Go servers advertise; 4096 in flight is far above what the
 * workers' queues take (job_queue_size per model) and far below what costs the server memory
 * (24 000 open calls cost ~140 MB).
 */
export const kDefaultLimits: Readonly<ListenerLimits> = Object.freeze({
  maxConnections: 1024,
  keepAliveTimeoutMs: 65_000,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 70_000,
  maxStreamsPerConnection: 100,
  maxStreams: 4096,
});
