/**
 * mme-client's gRPC TLS credentials. grpc-js (1.14, channel-credentials.js getConnectionOptions) sets
 * the TLS servername to the target's host whatever it is, and Node prints DEP0123 when that is an IP
 * address, which RFC 6066 does not allow as a server name. To an IP address this connector sends no
 * server name and checks the certificate's IP SANs against the address, as Node does for `host`.
 */
import net from 'node:net';
import tls from 'node:tls';
import { CallCredentials, ChannelCredentials, credentials } from '@grpc/grpc-js';

type SecureConnector = ReturnType<ChannelCredentials['_createSecureConnector']>;

export interface TlsFiles {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** TLS to `address` (host:port as mme-client's --grpc takes it). */
export function tlsCredentials(address: string, files: TlsFiles): ChannelCredentials {
  const host = hostOf(address);
  return net.isIP(host) === 0
    ? credentials.createSsl(files.ca ?? null, files.key ?? null, files.cert ?? null)
    : new IpAddressCredentials(host, tls.createSecureContext({ ca: files.ca, cert: files.cert, key: files.key }));
}

function hostOf(address: string): string {
  const bracketed = /^\[([^\]]+)\]/.exec(address);
  if (bracketed) return bracketed[1];
  return net.isIP(address) === 6 ? address : address.replace(/:\d+$/, '');
}

class IpAddressCredentials extends ChannelCredentials {
  constructor(
    private readonly host: string,
    private readonly context: tls.SecureContext,
  ) {
    super();
  }

  _isSecure(): boolean {
    return true;
  }

  _equals(other: ChannelCredentials): boolean {
    return other === this;
  }

  _createSecureConnector(_target: unknown, _options: unknown, calls?: CallCredentials): SecureConnector {
    const callCredentials = calls ?? CallCredentials.createEmpty();
    return {
      connect: (socket) =>
        new Promise((resolve, reject) => {
          const secured = tls.connect(
            { socket, secureContext: this.context, host: this.host, ALPNProtocols: ['h2'] },
            () => {
              if (secured.authorized) resolve({ socket: secured, secure: true });
              else reject(secured.authorizationError);
            },
          );
          secured.on('error', reject);
        }),
      waitForReady: () => Promise.resolve(),
      getCallCredentials: () => callCredentials,
      destroy: () => {},
    };
  }
}
