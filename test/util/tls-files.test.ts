import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { issue, makeCa, swapIn, type KeyPair } from '../../harness/tls-certificates';
import { tempDir } from '../../harness/test-server';
import { isMmeError } from '../../src/errors';
import type { Timers } from '../../src/util/clock';
import { readTlsContext, TlsFiles, type TlsContext } from '../../src/util/tls-files';

/** Timers that never fire: the tests call check() themselves. */
const kStill: Timers = { setTimeout: () => ({ unref() {} }), clearTimeout() {} };

const fingerprint = (context: TlsContext) => new X509Certificate(context.cert as Buffer).fingerprint256;

function assertStartError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isMmeError(err) && err.code === 'MME_ERR_CONFIG', String(err));
    assert.match(err.message, pattern);
    assert.doesNotMatch(err.message, /\n/);
    return true;
  });
}

describe('TLS files (tls_cert_file, tls_key_file, tls_client_ca_file)', () => {
  let dir: string;
  let ca: KeyPair;
  let first: KeyPair;
  let second: KeyPair;
  before(() => {
    dir = tempDir('mme-tls-');
    ca = makeCa(dir, 'ca');
    first = issue(dir, ca, 'first');
    second = issue(dir, ca, 'second');
  });

  it('reads a certificate, its key and a client CA into a TLS 1.2+ context', () => {
    const { context, certificate } = readTlsContext({
      certFile: first.cert,
      keyFile: first.key,
      clientCaFile: ca.cert,
    });
    assert.equal(context.minVersion, 'TLSv1.2');
    assert.ok(context.ca);
    assert.match(certificate.subject, /CN=first/);
  });

  it('refuses a missing, unreadable, non-PEM, encrypted or mismatched file with one line naming the key', () => {
    const paths = { certFile: first.cert, keyFile: first.key, clientCaFile: null };
    assertStartError(
      () => readTlsContext({ ...paths, certFile: path.join(dir, 'none.crt') }),
      /^config key tls_cert_file: .*none\.crt does not exist$/,
    );
    assertStartError(() => readTlsContext({ ...paths, keyFile: dir }), /tls_key_file: .* is a directory/);
    assertStartError(
      () => readTlsContext({ ...paths, keyFile: path.join(first.cert, 'x') }),
      /tls_key_file: .* cannot be read \(ENOTDIR\)/,
    );
    assertStartError(
      () => readTlsContext({ ...paths, certFile: first.key }),
      /tls_cert_file: .* is not a PEM certificate/,
    );
    assertStartError(
      () => readTlsContext({ ...paths, clientCaFile: first.key }),
      /tls_client_ca_file: .* is not a PEM certificate/,
    );
    assertStartError(
      () => readTlsContext({ ...paths, keyFile: second.key }),
      /tls_key_file .* does not match the certificate in tls_cert_file/,
    );
    const encrypted = path.join(dir, 'encrypted.key');
    fs.writeFileSync(
      encrypted,
      require('node:crypto')
        .createPrivateKey(fs.readFileSync(first.key))
        .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' }),
    );
    assertStartError(() => readTlsContext({ ...paths, keyFile: encrypted }), /is encrypted/);
  });

  it('reloads changed files, and keeps the previous certificate while they do not fit together', () => {
    const live = { cert: path.join(dir, 'live.crt'), key: path.join(dir, 'live.key') };
    swapIn(first, live);
    const logs: string[] = [];
    const tls = new TlsFiles({ certFile: live.cert, keyFile: live.key, clientCaFile: null }, kStill, (l) =>
      logs.push(l),
    );
    const seen: string[] = [];
    tls.onChange((c) => seen.push(fingerprint(c)));
    const firstPrint = fingerprint(tls.context);
    tls.check();
    assert.deepEqual(seen, [], 'no change, no reload');

    // Half a rotation: the new key beside the old certificate.
    fs.copyFileSync(second.key, live.key);
    tls.check();
    assert.equal(fingerprint(tls.context), firstPrint);
    assert.match(
      logs.at(-1)!,
      /TLS files changed but cannot be used yet .*does not match.*still serving the previous certificate/,
    );

    fs.copyFileSync(second.cert, live.cert);
    tls.check();
    assert.notEqual(fingerprint(tls.context), firstPrint);
    assert.deepEqual(seen, [fingerprint(tls.context)]);
    assert.match(logs.at(-1)!, /TLS certificate reloaded from .*CN=second/);
    tls.close();
  });
});
