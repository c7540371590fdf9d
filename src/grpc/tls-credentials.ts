/**
 * gRPC's side of the server's certificate: a reload reaches new connections via setSecureContext.
 * grpc-js's own rotating credentials set grpc's cipher list and swap their two providers (1.14).
 */
import { ServerCredentials } from '@grpc/grpc-js';
import type { TlsFiles } from '../util/tls-files';

export class TlsServerCredentials extends ServerCredentials {
  /** Subscribed until the server's TlsFiles closes, with the server; a handshake longer than `handshakeTimeoutMs` is dropped. */
  constructor(tls: TlsFiles, handshakeTimeoutMs: number) {
    super(tls.peerOptions(handshakeTimeoutMs), tls.context);
    tls.onChange((context) => this.updateSecureContextOptions(context));
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}
