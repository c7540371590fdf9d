import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { issue, makeCa, swapIn, type KeyPair } from '../../harness/tls-certificates';
import { tempDir } from '../../harness/test-server';
import { isMmeError } from '../../src/errors';
import type { LogFields } from '../../src/logger';
import type { Timers } from '../../src/util/clock';
import { readTlsContext, TlsFiles, type TlsContext } from '../../src/util/tls-files';

/** Timers that never fire: the tests call check() themselves. */
const kStill: Timers = { setTimeout: () => ({ unref() {} }), clearTimeout() {} };

const fingerprint = (context: TlsContext) => new X509Certificate(context.cert as Buffer).fingerprint256;

async function assertStartError(fn: () => Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(fn, (err: unknown) => {
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

  it('reads a certificate, its key and a client CA into a TLS 1.2+ context', async () => {
    const { context, certificate } = await readTlsContext({
      certFile: first.cert,
      keyFile: first.key,
      clientCaFile: ca.cert,
    });
    assert.equal(context.minVersion, 'TLSv1.2');
    assert.ok(context.ca);
    assert.match(certificate.subject, /CN=first/);
  });

  it('refuses a missing, unreadable, non-PEM, encrypted or mismatched file with one line naming the key', async () => {
    const paths = { certFile: first.cert, keyFile: first.key, clientCaFile: null };
    await assertStartError(
      () => readTlsContext({ ...paths, certFile: path.join(dir, 'none.crt') }),
      /^config key tls_cert_file: .*none\.crt does not exist$/,
    );
    await assertStartError(() => readTlsContext({ ...paths, keyFile: dir }), /tls_key_file: .* is a directory/);
    await assertStartError(
      () => readTlsContext({ ...paths, keyFile: path.join(first.cert, 'x') }),
      /tls_key_file: .* cannot be read \(ENOTDIR\)/,
    );
    await assertStartError(
      () => readTlsContext({ ...paths, certFile: first.key }),
      /tls_cert_file: .* is not a PEM certificate/,
    );
    await assertStartError(
      () => readTlsContext({ ...paths, clientCaFile: first.key }),
      /tls_client_ca_file: .* is not a PEM certificate/,
    );
    await assertStartError(
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
    await assertStartError(() => readTlsContext({ ...paths, keyFile: encrypted }), /is encrypted/);
  });

  it('reloads changed files, and keeps the previous certificate while they do not fit together', async () => {
    const live = { cert: path.join(dir, 'live.crt'), key: path.join(dir, 'live.key') };
    swapIn(first, live);
    const logs: string[] = [];
    const tls = await TlsFiles.open({ certFile: live.cert, keyFile: live.key, clientCaFile: null }, kStill, (l) =>
      logs.push(l),
    );
    const seen: string[] = [];
    tls.onChange((c) => seen.push(fingerprint(c)));
    const firstPrint = fingerprint(tls.context);
    await tls.check();
    assert.deepEqual(seen, [], 'no change, no reload');

    // Half a rotation: the new key beside the old certificate.
    fs.copyFileSync(second.key, live.key);
    await tls.check();
    assert.equal(fingerprint(tls.context), firstPrint);
    assert.match(
      logs.at(-1)!,
      /TLS files changed but cannot be used yet .*does not match.*still serving the previous certificate/,
    );

    fs.copyFileSync(second.cert, live.cert);
    await tls.check();
    assert.notEqual(fingerprint(tls.context), firstPrint);
    assert.deepEqual(seen, [fingerprint(tls.context)]);
    assert.match(logs.at(-1)!, /TLS certificate reloaded from .*CN=second/);
    tls.close();
  });

  it('refuses a FIFO (or any file that is not a regular file) without waiting on it, keeping the certificate it serves', async () => {
    const live = { cert: path.join(dir, 'fifo.crt'), key: path.join(dir, 'fifo.key') };
    swapIn(first, live);
    const logs: string[] = [];
    const tls = await TlsFiles.open({ certFile: live.cert, keyFile: live.key, clientCaFile: null }, kStill, (l) =>
      logs.push(l),
    );
    const before = fingerprint(tls.context);
    const fifo = path.join(dir, 'fifo.new');
    execFileSync('mkfifo', [fifo]);
    fs.renameSync(fifo, live.cert);
    // On 18d136c this check blocks the process in open(), waiting for a writer that never comes.
    await tls.check();
    assert.equal(fingerprint(tls.context), before);
    assert.match(
      logs.at(-1)!,
      /tls_cert_file: .*fifo\.crt is not a regular file .*still serving the previous certificate/,
    );
    await assertStartError(
      () => readTlsContext({ certFile: live.cert, keyFile: live.key, clientCaFile: null }),
      /is not a regular file/,
    );
    tls.close();
  });

  it("names the certificate's subjectAltName at start, and warns when it has none", async () => {
    const logs: Array<[string, LogFields | undefined]> = [];
    const log = (line: string, fields?: LogFields) => logs.push([line, fields]);
    (await TlsFiles.open({ certFile: first.cert, keyFile: first.key, clientCaFile: null }, kStill, log)).close();
    assert.match(logs[0][0], /CN=first for IP Address:127\.0\.0\.1, DNS:localhost/);
    assert.equal(logs.length, 1, 'no warning for a certificate with names');
    logs.length = 0;
    // The usual first try: openssl req -x509 -subj /CN=localhost, no subjectAltName.
    (await TlsFiles.open({ certFile: ca.cert, keyFile: ca.key, clientCaFile: null }, kStill, log)).close();
    assert.match(logs[0][0], /CN=ca with no subjectAltName/);
    assert.match(logs[1][0], /names no host in a subjectAltName: curl, browsers and gRPC clients refuse it/);
    assert.equal(logs[1][1]?.level, 'warn');
  });
});
