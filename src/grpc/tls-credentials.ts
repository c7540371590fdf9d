/**
 * gRPC's side of the server's certificate (src/util/tls-files.ts): grpc-js serves TLS from a
 * ServerCredentials whose secure-context updates it applies to its http2 server with
 * setSecureContext, as the HTTP listeners do, so a reloaded certificate reaches new connections
 * without a restart and open ones are kept. grpc-js's own rotating credentials
 * (experimental.createCertificateProviderServerCredentials) are not used: they set grpc's cipher
 * list, and its factory passes its two providers to the constructor in swapped order (1.14).
 */
import { ServerCredentials } from '@grpc/grpc-js';
import type { TlsFiles } from '../util/tls-files';

export class TlsServerCredentials extends ServerCredentials {
  /** Subscribed until the server's TlsFiles closes, with the server; a handshake longer than `handshakeTimeoutMs` is dropped. */
  constructor(tls: TlsFiles, handshakeTimeoutMs: number) {
    super(
      { requestCert: tls.mutual, rejectUnauthorized: tls.mutual, handshakeTimeout: handshakeTimeoutMs },
      tls.context,
    );
    tls.onChange((context) => this.updateSecureContextOptions(context));
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}
