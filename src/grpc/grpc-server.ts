/**
 * The gRPC listener: KServe's GRPCInferenceService and TorchServe's InferenceAPIsService on one
 * port. grpc-js binds a port with no connection limit, so the port is this module's own net.Server
 * (maxConnections), which hands each connection it keeps to grpc-js's http2 server.
 */
import net from 'node:net';
import { type ConnectionInjector, Server, ServerCredentials } from '@grpc/grpc-js';
import type { ListenerLimits } from '../util/listener-limits';
import type { TlsFiles } from '../util/tls-files';
import type { GrpcDeps } from './call';
import { withInferCodec } from './infer-codec';
import { kserveService } from './kserve-service';
import { lenientDecoding } from './lenient-decoding';
import { StreamLoad } from './ordered-stream';
import { malformedTimeoutStatus } from './status';
import { serviceDefinitions } from './protos';
import { streamLimits } from './stream-limits';
import { TlsServerCredentials } from './tls-credentials';
import { torchserveService } from './torchserve-service';

export interface GrpcListenOptions {
  host: string;
  port: number;
  maxRequestSize: number;
  /** The server's certificate (TLS, mTLS with a client CA); null = plain text. */
  tls: TlsFiles | null;
  limits: ListenerLimits;
}

export class GrpcListener {
  private constructor(
    private readonly server: Server,
    private readonly front: net.Server,
    private readonly injector: ConnectionInjector,
    readonly address: string,
    readonly port: number,
    readonly streams: StreamLoad,
  ) {}

  static async listen(opts: GrpcListenOptions, deps: GrpcDeps): Promise<GrpcListener> {
    // Channelz (grpc-js's introspection service, which this server does not offer) would track
    // every call: closures and timestamps per call for counters nobody reads.
    const { limits } = opts;
    const server = new Server({
      'grpc.max_receive_message_length': opts.maxRequestSize,
      'grpc.enable_channelz': 0,
      'grpc.max_connection_idle_ms': limits.keepAliveTimeoutMs,
      'grpc.max_concurrent_streams': limits.maxStreamsPerConnection,
      interceptors: [
        malformedTimeoutStatus,
        streamLimits({ maxStreams: limits.maxStreams, firstMessageMs: limits.requestTimeoutMs }),
      ],
    });
    const defs = serviceDefinitions();
    const streams = new StreamLoad();
    server.addService(withInferCodec(lenientDecoding(defs.kserve.service)), kserveService(deps));
    server.addService(lenientDecoding(defs.torchserve.service), torchserveService(deps, streams));
    const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    const credentials = opts.tls
      ? new TlsServerCredentials(opts.tls, limits.headersTimeoutMs)
      : ServerCredentials.createInsecure();
    const injector = server.createConnectionInjector(credentials);
    const front = net.createServer((socket) => injector.injectConnection(socket));
    front.maxConnections = limits.maxConnections;
    await new Promise<void>((resolve, reject) => {
      front.once('error', reject);
      front.listen(opts.port, opts.host, resolve);
    });
    const port = (front.address() as net.AddressInfo).port;
    return new GrpcListener(server, front, injector, `${host}:${port}`, port, streams);
  }

  /** Takes no new connections or calls; resolves once the calls in progress have finished. */
  close(): Promise<void> {
    this.front.close();
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }

  /** Ends every call and connection still open (after the shutdown drain). */
  kill(): void {
    this.server.forceShutdown();
    this.injector.destroy();
  }
}
