/**
 * reliability-security.md §6 B, the HTTP layer (T-H1 … T-H5), over raw sockets where a client
 * library would refuse or repair the request. Timeouts are shortened through MmeServer's
 * listenerLimits so the short versions fit the suite; `npm run soak` runs T-H2 and T-H5 at the
 * server's real limits (scripts/hardening/).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import { kDefaultLimits } from '../../src/util/listener-limits';
import { runFuzz } from '../../scripts/hardening/fuzz';
import { oversizedBodies, oversizedBodyProblems } from '../../scripts/hardening/memory-bounds';
import { runSlowClients, slowClientProblems } from '../../scripts/hardening/slow-clients';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { startCliServer } from '../../harness/cli-server';
import { rawExchange, type RawExchange } from '../../harness/raw-http';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

function assertAnswered(x: RawExchange, status: number, what: string): void {
  assert.deepEqual(
    x.responses.map((r) => r.status),
    [status],
    `${what}: ${x.error ?? ''} ${x.responses.map((r) => r.body.toString()).join(' | ')}`,
  );
}

/** GET /ping through `agent`: its status, the Keep-Alive hint, and the connection it went out on. */
function pooledPing(
  url: string,
  agent: http.Agent,
): Promise<{ status: number; keepAlive: string | undefined; reused: boolean; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/ping`, { agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          keepAlive: res.headers['keep-alive'] as string | undefined,
          reused: req.reusedSocket,
          socket: req.socket!,
        }),
      );
    });
    req.on('error', reject);
  });
}

describe('hardening: HTTP layer', () => {
  it('T-H1 body_limits: 413 before reading past the limit, declared or chunked, on invoke and management; the connection is closed (the RSS they leave: npm run soak)', async () => {
    const store = tempDir('mme-store-');
    const s = await startCliServer('', { store });
    try {
      assert.equal((await loadModel(s, 'm', writeModelDir(store, 'm', addModel()))).status, 200);
      const port = Number(new URL(s.url).port);
      // Each kind twice: a refusal leaves the server able to refuse the next one alike.
      for (const kind of [...oversizedBodies(), ...oversizedBodies()])
        assert.deepEqual(await oversizedBodyProblems(port, kind), []);
      assert.equal((await request(`${s.url}/ping`)).status, 200);
    } finally {
      await s.stop();
    }
  });

  describe('on a server of its own', () => {
    let t: TestServer;
    afterEach(async () => {
      await t.close();
    });

    it('T-H2 slowloris_headers_and_body: slow headers and bodies are closed with 408 once their timeouts pass, while /ping on new connections is answered', async function () {
      this.timeout(180_000);
      const limits = { headersTimeoutMs: 2000, requestTimeoutMs: 3000 };
      t = await startTestServer('', { listenerLimits: limits });
      const r = await runSlowClients({
        port: t.server.listeners[0].port,
        headerSockets: 300,
        bodySockets: 50,
        headerByteEveryMs: 500,
        bodyByteEveryMs: 100,
        // A bound on a hang only: the probe stops once the server has closed every slow socket.
        boundMs: 120_000,
        minProbes: 20,
        probeEveryMs: 50,
      });
      // Node enforces both timeouts on a timer: half the headers timeout here (listener.ts).
      assert.deepEqual(slowClientProblems(r, { ...limits, checkMs: limits.headersTimeoutMs / 2 }, 20), []);
    });

    it('T-H3 header_abuse: oversized or too many headers are 431, ambiguous framing is 400, and nothing is smuggled', async () => {
      t = await startTestServer();
      assert.equal((await loadModel(t, 'm', writeModelDir(t.store, 'm', addModel()))).status, 200);
      const port = t.server.listeners[0].port;
      const ask = (text: string, responses?: number) => rawExchange(port, text, { timeoutMs: 5000, responses });
      const headers = (n: number) => Array.from({ length: n }, (_, i) => `x-h${i}: v\r\n`).join('');
      assertAnswered(
        await ask(`GET /ping HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`),
        431,
        'a 20 KiB header',
      );
      // 3 000 headers of a few bytes stay under the 16 KiB size limit: only their count gives them away.
      assertAnswered(
        await ask(`GET /ping HTTP/1.1\r\nHost: localhost\r\n${'a: b\r\n'.repeat(2999)}\r\n`),
        431,
        '3 000 headers',
      );
      assertAnswered(await ask(`GET /ping HTTP/1.1\r\nHost: localhost\r\n${headers(100)}\r\n`), 431, '101 headers');
      assertAnswered(await ask(`GET /ping HTTP/1.1\r\nHost: localhost\r\n${headers(99)}\r\n`, 1), 200, '100 headers');
      const invoke = JSON.stringify({ inputs: { x: [Array(16).fill(1)] } });
      const smuggled = 'GET /models HTTP/1.1\r\nHost: localhost\r\n\r\n';
      for (const [what, text] of [
        [
          'duplicate Content-Length',
          `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${invoke.length}\r\nContent-Length: ${invoke.length}\r\n\r\n${invoke}${smuggled}`,
        ],
        [
          'conflicting Content-Length',
          `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: ${invoke.length}\r\n\r\n${invoke}${smuggled}`,
        ],
        [
          'Transfer-Encoding and Content-Length',
          `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
        ],
        [
          'an obfuscated Transfer-Encoding',
          `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n${smuggled}`,
        ],
      ]) {
        // The smuggled request behind it must not be answered on its own.
        assertAnswered(await ask(text), 400, what);
      }
      const asBody = await ask(
        `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${smuggled.length}\r\nConnection: close\r\n\r\n${smuggled}`,
      );
      assertAnswered(asBody, 400, 'a request inside a body');
      const pipelined = await ask(
        `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${invoke.length}\r\n\r\n${invoke}GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n`,
        2,
      );
      assert.deepEqual(
        pipelined.responses.map((r) => r.status),
        [200, 200],
        'two pipelined requests, each parsed on its own',
      );
      assert.equal((await request(`${t.url}/ping`)).status, 200);
    });

    it('T-H5 keepalive_idle_race: the server outlasts load balancers, hints its keep-alive timeout, keeps a pooled connection between requests and closes it once idle; the next request gets a fresh connection (the race at the real timeout: npm run soak)', async () => {
      // The defaults keep connections longer than load balancers' 60 s, and can be enforced as created.
      assert.ok(kDefaultLimits.keepAliveTimeoutMs > 60_000);
      assert.ok(kDefaultLimits.headersTimeoutMs <= kDefaultLimits.requestTimeoutMs);
      const keepAliveTimeoutMs = 2000;
      t = await startTestServer('', { listenerLimits: { keepAliveTimeoutMs } });
      // A load balancer's pool: it keeps a connection until the server closes it (no idle timeout).
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const first = await pooledPing(t.url, agent);
        const second = await pooledPing(t.url, agent);
        for (const r of [first, second]) {
          assert.equal(r.status, 200);
          assert.equal(r.keepAlive, `timeout=${keepAliveTimeoutMs / 1000}`, 'the hint a pooling client honours');
        }
        assert.deepEqual([first.reused, second.reused], [false, true], 'the second request reuses the connection');
        assert.equal(second.socket, first.socket);
        // The server, not the client, ends the idle connection: this agent never times one out.
        if (!second.socket.destroyed) await once(second.socket, 'close');
        const third = await pooledPing(t.url, agent);
        assert.deepEqual([third.status, third.reused], [200, false], 'a fresh connection after the close');
      } finally {
        agent.destroy();
      }
    });
  });

  it('T-H4 http_fuzz: 500 generated requests over every route get valid HTTP answers below 500, and the server is whole afterwards', async () => {
    const r = await runFuzz({ runs: 500, seed: 20261129 });
    assert.ok(Object.keys(r.statuses).length > 3, `statuses ${JSON.stringify(r.statuses)}`);
  });
});
