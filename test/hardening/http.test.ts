/**
 * reliability-security.md §6 B, the HTTP layer (T-H1 … T-H5), over raw sockets where a client
 * library would refuse or repair the request. Timeouts are shortened through MmeServer's
 * listenerLimits so the short versions fit the suite; `npm run soak` runs T-H2 and T-H5 at the
 * server's real limits (scripts/hardening/).
 */
import assert from 'node:assert/strict';
import { kDefaultLimits } from '../../src/util/listener-limits';
import { runFuzz } from '../../scripts/hardening/fuzz';
import { keepAliveProblems } from '../../scripts/hardening/keepalive';
import { runSlowClients, slowClientProblems } from '../../scripts/hardening/slow-clients';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { startCliServer } from '../../harness/cli-server';
import { rssBytes } from '../../harness/process-probes';
import { rawExchange, type RawExchange } from '../../harness/raw-http';
import { loadModel, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';

const kMaxRequestSize = 6_553_500;

function assertAnswered(x: RawExchange, status: number, what: string): void {
  assert.deepEqual(
    x.responses.map((r) => r.status),
    [status],
    `${what}: ${x.error ?? ''} ${x.responses.map((r) => r.body.toString()).join(' | ')}`,
  );
}

describe('hardening: HTTP layer', () => {
  it('T-H1 body_limits: 413 before reading past the limit, declared or chunked, on invoke and management; the connection is closed; no memory kept', async () => {
    const store = tempDir('mme-store-');
    const s = await startCliServer('', { store });
    try {
      assert.equal((await loadModel(s, 'm', writeModelDir(store, 'm', addModel()))).status, 200);
      const port = Number(new URL(s.url).port);
      const over = Buffer.alloc(kMaxRequestSize + 2 ** 20, 'a');
      const kinds: Array<[string, Buffer]> = [
        // Only the headers are sent: a 413 that waited for the body would never come.
        [
          'a declared 7 MiB invoke body',
          Buffer.from(
            `POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${7 * 2 ** 20}\r\n\r\n`,
          ),
        ],
        // Past the limit, and never finished: the 413 cannot be waiting for its end.
        [
          'a chunked invoke body crossing the limit',
          Buffer.concat([
            Buffer.from(
              'POST /models/m/invoke HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
            ),
            Buffer.from(`${over.length.toString(16)}\r\n`),
            over,
          ]),
        ],
        [
          'a 1 MB POST /models',
          Buffer.concat([
            Buffer.from(
              `POST /models HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${2 ** 20}\r\n\r\n{"model_name":"x","url":"`,
            ),
            Buffer.alloc(2 ** 20 - 29, 'a'),
            Buffer.from('"}'),
          ]),
        ],
      ];
      // The client reads only once it has written everything: it must still find the 413, not a reset
      // connection (a server closing on unread input makes the kernel send RST).
      const send = async ([what, bytes]: [string, Buffer]) => {
        const x = await rawExchange(port, bytes, { timeoutMs: 10_000, readAfterWrite: true });
        assertAnswered(x, 413, what);
        assert.equal(JSON.parse(x.responses[0].body.toString()).errorCode, 'MME_ERR_PAYLOAD_TOO_LARGE', what);
        assert.ok(x.closed, `${what}: the connection was left open`);
      };
      // Warm-up first: the first few refused bodies raise the allocator's high-water mark once (as
      // Triton's chunk test waits for RSS to settle); a leak keeps growing after it.
      for (let i = 0; i < 30; i++) await send(kinds[i % kinds.length]);
      const before = rssBytes(s.pid);
      for (let i = 0; i < 100; i++) await send(kinds[i % kinds.length]);
      const growth = rssBytes(s.pid) - before;
      assert.ok(growth < 10 * 2 ** 20, `server RSS grew ${(growth / 2 ** 20).toFixed(1)} MiB over 100 refused bodies`);
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

    it('T-H2 slowloris_headers_and_body: slow headers and bodies are cut off at their timeouts while /ping and new connections stay fast', async () => {
      const limits = { headersTimeoutMs: 2000, requestTimeoutMs: 3000 };
      t = await startTestServer('', { listenerLimits: limits });
      const r = await runSlowClients({
        port: t.server.listeners[0].port,
        headerSockets: 300,
        bodySockets: 50,
        headerByteEveryMs: 500,
        bodyByteEveryMs: 100,
        durationMs: 9000,
        probeEveryMs: 50,
      });
      // Node enforces both timeouts on a timer: half the headers timeout here (listener.ts).
      assert.deepEqual(slowClientProblems(r, { ...limits, checkMs: limits.headersTimeoutMs / 2 }), []);
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

    it('T-H5 keepalive_idle_race: keep-alive outlasts the client; pooled clients never hit a closing connection', async () => {
      // The defaults keep connections longer than load balancers' 60 s, and can be enforced as created.
      assert.ok(kDefaultLimits.keepAliveTimeoutMs >= 65_000);
      assert.ok(kDefaultLimits.headersTimeoutMs <= kDefaultLimits.requestTimeoutMs);
      const keepAliveTimeoutMs = 2000;
      t = await startTestServer('', { listenerLimits: { keepAliveTimeoutMs } });
      assert.deepEqual(await keepAliveProblems(t.url, keepAliveTimeoutMs, 5), []);
    });
  });

  it('T-H4 http_fuzz: 500 generated requests over every route get valid HTTP answers below 500, and the server is whole afterwards', async () => {
    const r = await runFuzz({ runs: 500, seed: 20261129 });
    assert.ok(Object.keys(r.statuses).length > 3, `statuses ${JSON.stringify(r.statuses)}`);
  });
});
