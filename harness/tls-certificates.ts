/**
 * Real certificates for TLS tests, made with the openssl command line: a CA, and server or client
 * certificates it signs (EC P-256: quick to generate on a busy machine).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface KeyPair {
  cert: string;
  key: string;
}

const kCurve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A self-signed CA in `dir`, files named after `name`. */
export function makeCa(dir: string, name: string): KeyPair {
  const pair = { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
  openssl(
    ['req', '-x509', ...kCurve, '-keyout', pair.key, '-out', pair.cert, '-days', '2', '-subj', `/CN=${name}`],
    dir,
  );
  return pair;
}

/**
 * A certificate for CN `name` signed by `ca`: a server's for 127.0.0.1 and localhost, or a
 * client's (`client`).
 */
export function issue(dir: string, ca: KeyPair, name: string, opts: { client?: boolean } = {}): KeyPair {
  const pair = { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  fs.writeFileSync(
    ext,
    opts.client
      ? 'extendedKeyUsage=clientAuth\n'
      : 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  openssl(['req', ...kCurve, '-keyout', pair.key, '-out', csr, '-subj', `/CN=${name}`], dir);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-out',
      pair.cert,
      '-days',
      '2',
      '-extfile',
      ext,
    ],
    dir,
  );
  return pair;
}

/** Replaces `to`'s files with `from`'s by rename, as cert-manager's atomic writes do: no reader sees half a file. */
export function swapIn(from: KeyPair, to: KeyPair): void {
  for (const k of ['key', 'cert'] as const) {
    const staged = `${to[k]}.new`;
    fs.copyFileSync(from[k], staged);
    fs.renameSync(staged, to[k]);
  }
}
