/**
 * The certificate every TLS listener serves (tls_cert_file, tls_key_file, tls_client_ca_file):
 * checked at start-up, then reloaded when cert-manager rotates the files. Changes are seen by
 * watching the directories (a Kubernetes secret volume swaps a symlink, which a file watch misses)
 * and by a stat poll; files half-written or not matching yet leave the previous certificate in
 * place. New contexts apply to new connections only, so a rotation drops nothing. A FIFO or device
 * where a certificate was expected is refused, never waited on.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createSecureContext, type SecureContextOptions, type TlsOptions } from 'node:tls';
import { configError } from '../errors';
import type { Log } from '../logger';
import type { Timer, Timers } from './clock';

export interface TlsPaths {
  readonly certFile: string;
  readonly keyFile: string;
  /** null = no client certificate asked for (no mTLS). */
  readonly clientCaFile: string | null;
}

/** What every TLS listener is created and updated with (Node's default ciphers). */
export interface TlsContext extends SecureContextOptions {
  readonly minVersion: 'TLSv1.2';
}

/** Catches a change the directory watch missed; a stat of three files costs nothing. */
const kPollMs = 10_000;
/** A burst of watch events (a file written in pieces, a symlink swap) is read once, after it settles. */
const kSettleMs = 200;
/** A PEM bundle of many certificates is tens of KiB; past this it is not a certificate file. */
const kMaxFileBytes = 1 << 20;
/** A local file is read in milliseconds; a stalled network mount is not waited on for longer. */
const kReadMs = 5_000;

/** The context, or an MmeError naming the key and what to change. */
export async function readTlsContext(paths: TlsPaths): Promise<{ context: TlsContext; certificate: X509Certificate }> {
  const certPem = await readKeyFile('tls_cert_file', paths.certFile);
  const keyPem = await readKeyFile('tls_key_file', paths.keyFile);
  const caPem = paths.clientCaFile === null ? null : await readKeyFile('tls_client_ca_file', paths.clientCaFile);
  const certificate = parseCertificate('tls_cert_file', paths.certFile, certPem);
  if (caPem !== null) parseCertificate('tls_client_ca_file', paths.clientCaFile!, caPem);
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw configError(
      `tls_key_file ${paths.keyFile} is not a PEM private key${/ENCRYPTED/.test(keyPem.toString('latin1')) ? ' that can be read without a passphrase (it is encrypted; decrypt it, e.g. openssl pkey -in key.pem -out plain.pem)' : ''}`,
    );
  }
  if (!certificate.checkPrivateKey(key)) {
    throw configError(
      `tls_key_file ${paths.keyFile} does not match the certificate in tls_cert_file ${paths.certFile}; give the key the certificate was issued for`,
    );
  }
  const context: TlsContext = { cert: certPem, key: keyPem, ...(caPem ? { ca: caPem } : {}), minVersion: 'TLSv1.2' };
  try {
    createSecureContext(context);
  } catch (err) {
    throw configError(`tls_cert_file ${paths.certFile} cannot be used: ${(err as Error).message}`);
  }
  return { context, certificate };
}

async function readKeyFile(key: string, file: string): Promise<Buffer> {
  const refuse = (why: string) => configError(`config key ${key}: ${file} ${why}`);
  let handle: fs.promises.FileHandle;
  try {
    // Without O_NONBLOCK, opening a FIFO waits for a writer, holding one of libuv's four threads for good.
    handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw refuse(
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? `cannot be read by this user (uid ${process.getuid?.() ?? '?'})`
          : `cannot be read (${code ?? String(err)})`,
    );
  }
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) throw refuse('is a directory, not a file');
    if (!stat.isFile()) throw refuse('is not a regular file (a FIFO, socket or device); point it at the PEM file');
    if (stat.size > kMaxFileBytes) throw refuse(`is ${stat.size} bytes, more than a PEM file's ${kMaxFileBytes}`);
    return await handle.readFile({ signal: AbortSignal.timeout(kReadMs) });
  } catch (err) {
    throw (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError'
      ? refuse(`could not be read within ${kReadMs / 1000} s`)
      : err;
  } finally {
    await handle.close();
  }
}

function parseCertificate(key: string, file: string, pem: Buffer): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw configError(`config key ${key}: ${file} is not a PEM certificate (expected -----BEGIN CERTIFICATE-----)`);
  }
}

/**
 * `what` and the certificate in one line; a warning when it names no host: clients match the host
 * they dialled against the subjectAltName only (RFC 6125), so without one every client refuses it.
 */
function announce(log: Log, what: string, certificate: X509Certificate, certFile: string, suffix = ''): void {
  const names = certificate.subjectAltName ? `for ${certificate.subjectAltName}` : 'with no subjectAltName';
  const valid = new Date(certificate.validTo).toISOString();
  log(`${what}: ${certificate.subject.replace(/\n/g, ', ')} ${names}, valid until ${valid}${suffix}`);
  if (certificate.subjectAltName) return;
  log(
    `TLS certificate ${certFile} names no host in a subjectAltName: curl, browsers and gRPC clients refuse it for every host; issue it with one (docs/security.md has the openssl command)`,
    { level: 'warn' },
  );
}

function filesOf(paths: TlsPaths): string[] {
  return [paths.certFile, paths.keyFile, ...(paths.clientCaFile ? [paths.clientCaFile] : [])];
}

export class TlsFiles {
  #context: TlsContext;
  /** The files' stat signature when last read, successfully or not. */
  #seen: string;
  readonly #listeners = new Set<(context: TlsContext) => void>();
  readonly #watchers: fs.FSWatcher[] = [];
  #poll: Timer | null = null;
  #settle: Timer | null = null;
  #closed = false;
  #reading = false;

  /** Rejects with the start error. */
  static async open(paths: TlsPaths, timers: Timers, log: Log): Promise<TlsFiles> {
    const seen = TlsFiles.#signatureOf(paths);
    const { context, certificate } = await readTlsContext(paths);
    const mutual = paths.clientCaFile ? `; client certificates signed by ${paths.clientCaFile} required` : '';
    announce(log, `TLS certificate from ${paths.certFile}`, certificate, paths.certFile, mutual);
    return new TlsFiles(paths, timers, log, context, seen);
  }

  private constructor(
    readonly paths: TlsPaths,
    private readonly timers: Timers,
    private readonly log: Log,
    context: TlsContext,
    seen: string,
  ) {
    this.#context = context;
    this.#seen = seen;
    for (const dir of new Set(filesOf(paths).map((f) => path.dirname(f)))) {
      try {
        const watcher = fs.watch(dir, { persistent: false }, () => this.#soon());
        watcher.on('error', () => watcher.close()); // the poll still sees changes
        this.#watchers.push(watcher);
      } catch {
        // a directory that cannot be watched: the poll alone notices changes
      }
    }
    this.#schedulePoll();
  }

  get context(): TlsContext {
    return this.#context;
  }

  /** What every TLS server sets beside the context: the client certificate asked for with mTLS, and the handshake's limit. */
  peerOptions(handshakeTimeoutMs: number): Pick<TlsOptions, 'requestCert' | 'rejectUnauthorized' | 'handshakeTimeout'> {
    const mutual = this.paths.clientCaFile !== null;
    return { requestCert: mutual, rejectUnauthorized: mutual, handshakeTimeout: handshakeTimeoutMs };
  }

  /** Returns what stops the calls. */
  onChange(listener: (context: TlsContext) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A change while a read is under way is seen by the next check. */
  async check(): Promise<void> {
    if (this.#closed || this.#reading) return;
    const signature = TlsFiles.#signatureOf(this.paths);
    if (signature === this.#seen) return;
    this.#seen = signature;
    let read: Awaited<ReturnType<typeof readTlsContext>>;
    this.#reading = true;
    try {
      read = await readTlsContext(this.paths);
    } catch (err) {
      this.log(
        `TLS files changed but cannot be used yet (${(err as Error).message}); still serving the previous certificate until they change again`,
        { level: 'warn' },
      );
      return;
    } finally {
      this.#reading = false;
    }
    if (this.#closed) return;
    this.#context = read.context;
    for (const listener of this.#listeners) listener(read.context);
    announce(this.log, `TLS certificate reloaded from ${this.paths.certFile}`, read.certificate, this.paths.certFile);
  }

  close(): void {
    this.#closed = true;
    this.#listeners.clear();
    for (const w of this.#watchers) w.close();
    this.timers.clearTimeout(this.#poll);
    this.timers.clearTimeout(this.#settle);
  }

  /** Following links; ctime sees a chmod too. */
  static #signatureOf(paths: TlsPaths): string {
    return filesOf(paths)
      .map((f) => {
        try {
          const s = fs.statSync(f);
          return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
        } catch {
          return '-';
        }
      })
      .join('|');
  }

  #soon(): void {
    if (this.#settle !== null || this.#closed) return;
    this.#settle = this.timers.setTimeout(() => {
      this.#settle = null;
      void this.check();
    }, kSettleMs);
  }

  #schedulePoll(): void {
    if (this.#closed) return;
    this.#poll = this.timers.setTimeout(() => {
      void this.check();
      this.#schedulePoll();
    }, kPollMs);
    this.#poll.unref();
  }
}
