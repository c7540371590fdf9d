/** The security keys that several values decide together: the tls_* files with the listeners' schemes, and inference_token. */
import { configError } from '../errors';
import type { Settings } from './settings';
import type { TlsPaths } from '../util/tls-files';
import type { ListenAddress } from './types';

/**
 * An https:// listener needs the certificate; with one, an http:// inference_address is a likely
 * mistake (plain text where TLS was meant), while management_address and metrics_address may stay
 * http:// (e.g. on loopback).
 */
export function tlsConfig(
  s: Settings,
  addresses: ReadonlyArray<readonly [string, ListenAddress | null]>,
): TlsPaths | null {
  const certFile = s.read('tls_cert_file');
  const keyFile = s.read('tls_key_file');
  const clientCaFile = s.read('tls_client_ca_file');
  if ((certFile === null) !== (keyFile === null) || (clientCaFile !== null && certFile === null)) {
    const set = (['tls_cert_file', 'tls_key_file', 'tls_client_ca_file'] as const).filter((k) => s.has(k));
    throw configError(
      `config keys tls_cert_file and tls_key_file go together (and tls_client_ca_file needs them), but only ${set.join(' and ')} ${set.length > 1 ? 'are' : 'is'} set${s.fromText(set[0])}; set both files for TLS, or none`,
    );
  }
  if (certFile === null || keyFile === null) {
    const https = addresses.find(([, a]) => a?.scheme === 'https');
    if (https) {
      throw configError(
        `${https[0]} ${https[1]!.raw} is https:// but no certificate is configured; set tls_cert_file and tls_key_file, or use http://`,
      );
    }
    return null;
  }
  const [, inference] = addresses[0];
  if (inference?.scheme === 'http') {
    throw configError(
      `tls_cert_file is set but inference_address ${inference.raw} is http://, so the data plane would be served in plain text; write https://${inference.raw.slice('http://'.length)} (management_address and metrics_address may stay http://)`,
    );
  }
  return { certFile, keyFile, clientCaFile };
}

/** inference_token's comma list; SageMaker's platform would be refused, since it sends no token. */
export function inferenceTokens(s: Settings, multiModel: boolean): string[] {
  const raw = s.read('inference_token');
  if (raw === null) return [];
  if (multiModel) {
    throw configError(
      `config key inference_token is set${s.fromText('inference_token')} but SAGEMAKER_MULTI_MODEL=true: SageMaker's platform sends no token, so every invoke would be refused; remove inference_token (SageMaker authenticates callers itself)`,
    );
  }
  const tokens = raw.split(',').map((t) => t.trim());
  if (tokens.some((t) => t === '' || /\s/.test(t))) {
    throw configError(
      `config key inference_token has an empty token or one with a space${s.fromText('inference_token')} (expected a comma list of tokens, e.g. inference_token=$$MME_INFERENCE_TOKEN$$ or new-token,old-token)`,
    );
  }
  return tokens;
}
