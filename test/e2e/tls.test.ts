/**
 * TLS on every listener, with real certificates (openssl) and real clients (node:https, tls,
 * @grpc/grpc-js with ssl credentials): served, a client without the CA refused, mutual TLS,
 * a certificate rotated under load, and the start errors.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { once } from 'node:events';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { credentials, status as Status } from '@grpc/grpc-js';
import { runCliToExit } from '../../harness/cli-server';
import { failure, unary, type GrpcClients } from '../../harness/grpc-clients';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { issue, makeCa, swapIn, type KeyPair } from '../../harness/tls-certificates';
import { connect } from '../../src/cli/grpc-calls';

interface Answer {
  status: number;
  body: string;
  /** The server certificate's SHA-256 fingerprint. */
  fingerprint: string;
  reused: boolean;
}

function get(url: string, options: https.RequestOptions = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, options, (res) => {
      const socket = res.socket as tls.TLSSocket;
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body, fingerprint, reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });
}

/** The certificate a new TLS connection to the gRPC port gets (offering h2, as gRPC clients do). */
function grpcCertificate(port: number, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, ALPNProtocols: ['h2'] }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

const fingerprintOf = (pair: KeyPair) =>
  new (require('node:crypto').X509Certificate)(fs.readFileSync(pair.cert)).fingerprint256;
const sslClients = (port: number, ca: Buffer, client?: KeyPair): GrpcClients =>
  connect(
    `localhost:${port}`,
    {},
    credentials.createSsl(ca, client && fs.readFileSync(client.key), client && fs.readFileSync(client.cert)),
  );

describe('TLS on every listener', () => {
  let dir: string;
  let ca: KeyPair;
  let caPem: Buffer;
  let live: KeyPair;
  let next: KeyPair;
  /** Never served: its key fits no certificate the tests use. */
  let spare: KeyPair;
  before(() => {
    dir = tempDir('mme-tls-');
    ca = makeCa(dir, 'ca');
    caPem = fs.readFileSync(ca.cert);
    live = { cert: path.join(dir, 'tls.crt'), key: path.join(dir, 'tls.key') };
    swapIn(issue(dir, ca, 'server'), live);
    next = issue(dir, ca, 'server-next');
    spare = issue(dir, ca, 'spare');
  });
  const tlsKeys = (extra = '') =>
    `inference_address=https://127.0.0.1:0\nmanagement_address=https://127.0.0.1:0\ngrpc_inference_port=0\ntls_cert_file=${live.cert}\ntls_key_file=${live.key}\n${extra}`;

  describe('served', () => {
    let t: TestServer;
    let c: GrpcClients;
    before(async () => {
      t = await startTestServer(tlsKeys());
      c = sslClients(t.server.grpc!.port, caPem);
    });
    after(async () => {
      c.close();
      await t.close();
    });

    it('over HTTPS (TLS 1.2 or later) to a client that trusts the CA', async () => {
      assert.match(t.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(t.logs.some((l) => /inference \+ management API listening on https:/.test(l)));
      const res = await get(`${t.url}/ping`, { ca: caPem });
      assert.equal(res.status, 200);
      const version = await new Promise<string>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port: t.server.listeners[0].port, ca: caPem }, () => {
          resolve(s.getProtocol()!);
          s.end();
        });
        s.on('error', reject);
      });
      assert.match(version, /^TLSv1\.[23]$/);
      await assert.rejects(get(`${t.url}/ping`, { ca: caPem, maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }));
    });

    it('refuses a client that does not trust the CA; a plain-text one gets one line saying to use https', async () => {
      await assert.rejects(get(`${t.url}/ping`), (err: NodeJS.ErrnoException) =>
        /CERT|SIGN|ISSUER/.test(err.code ?? ''),
      );
      const plain = await fetch(t.url.replace('https:', 'http:') + '/ping');
      assert.equal(plain.status, 400);
      assert.match(plain.headers.get('content-type')!, /^text\/plain/);
      assert.equal(await plain.text(), 'This port speaks HTTPS (TLS): send the request to https://, not http://\n');
    });

    it('names the certificate and its subjectAltName at start', () => {
      assert.ok(
        t.logs.some((l) => /TLS certificate from .*CN=server for IP Address:127\.0\.0\.1, DNS:localhost/.test(l)),
      );
    });

    it('over gRPC with ssl credentials; a plain-text or untrusting client cannot connect', async () => {
      assert.deepEqual(await unary(c.kserve, 'ServerLive'), { live: true });
      assert.ok(t.logs.some((l) => /gRPC inference API .* listening on .* \(TLS\)/.test(l)));
      const plain = connect(`localhost:${t.server.grpc!.port}`);
      const untrusting = connect(`localhost:${t.server.grpc!.port}`, {}, credentials.createSsl());
      for (const other of [plain, untrusting]) {
        assert.equal((await failure(unary(other.kserve, 'ServerLive'))).code, Status.UNAVAILABLE);
        other.close();
      }
    });
  });

  describe('handshake bound (the header bound, issue 49)', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(tlsKeys(), { listenerLimits: { headersTimeoutMs: 200, requestTimeoutMs: 200 } });
    });
    after(() => t.close());

    it('closes a connection that sends no ClientHello within headers_timeout, on HTTPS and gRPC', async () => {
      const silent = (port: number) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.on('error', () => {});
        socket.resume();
        return once(socket, 'close');
      };
      await Promise.all([silent(t.server.listeners[0].port), silent(t.server.grpc!.port)]);
    });
  });

  describe('mutual TLS (tls_client_ca_file)', () => {
    let t: TestServer;
    let clientCa: KeyPair;
    let client: KeyPair;
    let stranger: KeyPair;
    before(async () => {
      clientCa = makeCa(dir, 'client-ca');
      client = issue(dir, clientCa, 'client', { client: true });
      stranger = issue(dir, ca, 'stranger', { client: true });
      t = await startTestServer(tlsKeys(`tls_client_ca_file=${clientCa.cert}`));
    });
    after(async () => {
      await t.close();
    });

    it('serves only clients with a certificate the client CA signed, over HTTPS and gRPC', async () => {
      const withCert = (pair: KeyPair) => ({
        ca: caPem,
        cert: fs.readFileSync(pair.cert),
        key: fs.readFileSync(pair.key),
      });
      assert.equal((await get(`${t.url}/ping`, withCert(client))).status, 200);
      await assert.rejects(get(`${t.url}/ping`, { ca: caPem }));
      await assert.rejects(get(`${t.url}/ping`, withCert(stranger)));
      const port = t.server.grpc!.port;
      const good = sslClients(port, caPem, client);
      assert.deepEqual(await unary(good.kserve, 'ServerLive'), { live: true });
      good.close();
      for (const pair of [undefined, stranger]) {
        const bad = sslClients(port, caPem, pair);
        assert.equal((await failure(unary(bad.kserve, 'ServerLive'))).code, Status.UNAVAILABLE);
        bad.close();
      }
    });
  });

  describe('rotation', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(tlsKeys());
    });
    after(async () => {
      await t.close();
    });

    it('swaps the certificate under load: no request fails, open connections stay, new ones get the new certificate', async () => {
      const oldPrint = fingerprintOf(live);
      const newPrint = fingerprintOf(next);
      const port = t.server.grpc!.port;
      // Opened before the swap, kept open through it.
      const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 1, ca: caPem });
      assert.equal((await get(`${t.url}/ping`, { agent: keepAlive })).fingerprint, oldPrint);
      const grpcBefore = sslClients(port, caPem);
      assert.deepEqual(await unary(grpcBefore.kserve, 'ServerLive'), { live: true });

      let swapped = false;
      let answered = 0;
      const seen = { http: false, grpc: false };
      const failures: unknown[] = [];
      // Each loop opens a new connection per request (agent: false), until both listeners show the new certificate.
      const loop = async () => {
        while (!(seen.http && seen.grpc) && failures.length === 0) {
          try {
            const res = await get(`${t.url}/ping`, { ca: caPem, agent: false });
            assert.equal(res.status, 200);
            assert.ok(res.fingerprint === oldPrint || res.fingerprint === newPrint);
            if (swapped && res.fingerprint === newPrint) seen.http = true;
            if (swapped && (await grpcCertificate(port, caPem)) === newPrint) seen.grpc = true;
            await unary(grpcBefore.kserve, 'ServerLive');
            answered++;
          } catch (err) {
            failures.push(err);
          }
        }
      };
      const loops = [loop(), loop(), loop()];
      while (answered < 10 && failures.length === 0) await new Promise((r) => setImmediate(r));
      swapIn(next, live);
      swapped = true;
      await Promise.all(loops);
      assert.deepEqual(failures, []);
      assert.ok(t.logs.some((l) => /TLS certificate reloaded from .*CN=server-next/.test(l)));

      // The connection opened before the swap was kept, and still has the old certificate.
      const again = await get(`${t.url}/ping`, { agent: keepAlive });
      assert.deepEqual([again.status, again.reused, again.fingerprint], [200, true, oldPrint]);
      assert.deepEqual(await unary(grpcBefore.kserve, 'ServerLive'), { live: true });
      const grpcAfter = sslClients(port, caPem);
      assert.deepEqual(await unary(grpcAfter.kserve, 'ServerLive'), { live: true });
      for (const c of [grpcBefore, grpcAfter]) c.close();
      keepAlive.destroy();
    });
  });

  describe('start errors: one line, exit code 1, no stack', () => {
    const base = 'inference_address=https://127.0.0.1:0\nmanagement_address=https://127.0.0.1:0\n';
    const cases: Array<[string, () => string, RegExp]> = [
      [
        'a missing certificate',
        () => `${base}tls_cert_file=${dir}/none.crt\ntls_key_file=${live.key}`,
        /tls_cert_file: .*none\.crt does not exist/,
      ],
      [
        'an unreadable key (a directory)',
        () => `${base}tls_cert_file=${live.cert}\ntls_key_file=${dir}`,
        /tls_key_file: .* is a directory/,
      ],
      [
        'a key of another certificate',
        () => `${base}tls_cert_file=${next.cert}\ntls_key_file=${spare.key}`,
        /does not match the certificate/,
      ],
      [
        'a certificate without its key',
        () => `${base}tls_cert_file=${live.cert}`,
        /tls_cert_file and tls_key_file go together/,
      ],
      [
        'an https:// address without a certificate',
        () => base,
        /inference_address https:\/\/127\.0\.0\.1:0 is https:\/\/ but no certificate/,
      ],
      [
        'a certificate with an http:// inference_address',
        () => `tls_cert_file=${live.cert}\ntls_key_file=${live.key}`,
        /inference_address http:\/\/127\.0\.0\.1:8080 is http:\/\//,
      ],
    ];
    for (const [what, properties, pattern] of cases) {
      it(what, async () => {
        const r = await runCliToExit(properties());
        assert.equal(r.code, 1, r.stderr);
        const lines = r.stderr.trim().split('\n');
        assert.equal(lines.length, 1, r.stderr);
        assert.match(lines[0], pattern);
        assert.doesNotMatch(r.stderr, /^\s+at /m);
      });
    }
  });
});
