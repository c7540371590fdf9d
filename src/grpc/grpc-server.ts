/**
 * The gRPC listener (grpc_inference_address:grpc_inference_port): KServe's GRPCInferenceService
 * and TorchServe's InferenceAPIsService on one port, behind the same model manager, queue,
 * batching, metrics and guards as HTTP. max_request_size bounds each received message.
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { TlsFiles } from '../util/tls-files';
import type { GrpcDeps } from './call';
import { withInferCodec } from './infer-codec';
import { kserveService } from './kserve-service';
import { lenientDecoding } from './lenient-decoding';
import { StreamLoad } from './ordered-stream';
import { malformedTimeoutStatus } from './status';
import { serviceDefinitions } from './protos';
import { TlsServerCredentials } from './tls-credentials';
import { torchserveService } from './torchserve-service';

export interface GrpcListenOptions {
  host: string;
  /** 0 = an ephemeral port (tests). */
  port: number;
  maxRequestSize: number;
  /** The server's certificate (TLS, mTLS with a client CA); null = plain text. */
  tls: TlsFiles | null;
}

export class GrpcListener {
  private constructor(
    private readonly server: Server,
    readonly address: string,
    readonly port: number,
    readonly streams: StreamLoad,
  ) {}

  static async listen(opts: GrpcListenOptions, deps: GrpcDeps): Promise<GrpcListener> {
    // Channelz (grpc-js's introspection service, which this server does not offer) would track
    // every call: closures and timestamps per call for counters nobody reads.
    const server = new Server({
      'grpc.max_receive_message_length': opts.maxRequestSize,
      'grpc.enable_channelz': 0,
      interceptors: [malformedTimeoutStatus],
    });
    const defs = serviceDefinitions();
    const streams = new StreamLoad();
    server.addService(withInferCodec(lenientDecoding(defs.kserve.service)), kserveService(deps));
    server.addService(lenientDecoding(defs.torchserve.service), torchserveService(deps, streams));
    const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    const credentials = opts.tls ? new TlsServerCredentials(opts.tls) : ServerCredentials.createInsecure();
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${host}:${opts.port}`, credentials, (err, bound) => (err ? reject(err) : resolve(bound)));
    });
    return new GrpcListener(server, `${host}:${port}`, port, streams);
  }

  /** Takes no new calls; resolves once the calls in progress have finished. */
  close(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }

  /** Ends every call still open (after the shutdown drain). */
  kill(): void {
    this.server.forceShutdown();
  }
}
