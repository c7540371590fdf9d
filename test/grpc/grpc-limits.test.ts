/**
 * Issue 49's C1: the gRPC listener keeps the bounds every listener keeps (src/util/listener-limits.ts).
 * Each test waits for the server's own action (a close, a status), with bounds configured small;
 * on a listener without them (main at 18d136c) it waits until mocha's timeout.
 */
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { once } from 'node:events';
import { status as Status } from '@grpc/grpc-js';
import { startTestServer, type TestServer } from '../../harness/test-server';

/** A call's headers, as a gRPC client sends them, with no message after them. */
const kCallHeaders = {
  ':method': 'POST',
  ':path': '/inference.GRPCInferenceService/ServerLive',
  'content-type': 'application/grpc',
  te: 'trailers',
};

/** An HTTP/2 session to the gRPC port, once it has the server's settings. */
async function session(port: number): Promise<http2.ClientHttp2Session> {
  const s = http2.connect(`http://127.0.0.1:${port}`);
  s.on('error', () => {}); // a close by the server is what some tests wait for
  await once(s, 'remoteSettings');
  return s;
}

/** The grpc-status a call ends with: in a trailers-only answer's headers, or in its trailers. */
function grpcStatus(stream: http2.ClientHttp2Stream): Promise<number> {
  return new Promise((resolve, reject) => {
    stream.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) resolve(Number(headers['grpc-status']));
    });
    stream.on('trailers', (trailers) => resolve(Number(trailers['grpc-status'])));
    stream.on('error', reject);
    stream.resume();
  });
}

/** A TCP connection that sends nothing (and reads what comes, so it sees the server's close), once connected. */
async function silentSocket(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.resume();
  await once(socket, 'connect');
  return socket;
}

describe('gRPC listener limits (issue 49, C1)', () => {
  describe('with the default timeouts', () => {
    let t: TestServer;
    const sessions: http2.ClientHttp2Session[] = [];
    before(async () => {
      t = await startTestServer('grpc_inference_port=0\nmax_connections=3', {
        listenerLimits: { maxStreams: 2, maxStreamsPerConnection: 5 },
      });
    });
    after(async () => {
      for (const s of sessions) s.destroy();
      await t.close();
    });

    it('counts connections against max_connections: one past it is closed at once', async () => {
      for (let i = 0; i < 3; i++) sessions.push(await session(t.server.grpc!.port));
      // Accepted after the three above (the kernel's accept queue is in order), so it is the fourth.
      const fourth = await silentSocket(t.server.grpc!.port);
      await once(fourth, 'close');
      const [first] = sessions;
      assert.equal(first.closed || first.destroyed, false);
    });

    it('advertises its streams per connection and refuses a call past the server-wide limit with RESOURCE_EXHAUSTED', async () => {
      const [s] = sessions;
      assert.equal(s.remoteSettings.maxConcurrentStreams, 5);
      // One connection's frames arrive in order: the third call's headers come after the first two's.
      const held = [s.request(kCallHeaders), s.request(kCallHeaders)];
      const third = s.request(kCallHeaders);
      third.end();
      assert.equal(await grpcStatus(third), Status.RESOURCE_EXHAUSTED);
      for (const h of held) h.close();
    });
  });

  describe('with short timeouts', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer('grpc_inference_port=0', {
        listenerLimits: { keepAliveTimeoutMs: 200, headersTimeoutMs: 200, requestTimeoutMs: 200 },
      });
    });
    after(() => t.close());

    it('closes a connection with no call open after the keep-alive time, with or without the HTTP/2 preface', async () => {
      const s = await session(t.server.grpc!.port);
      const raw = await silentSocket(t.server.grpc!.port);
      await Promise.all([once(s, 'close'), once(raw, 'close')]);
    });

    it('ends a call whose first message does not come within request_timeout of its headers (DEADLINE_EXCEEDED)', async () => {
      const s = await session(t.server.grpc!.port);
      try {
        assert.equal(await grpcStatus(s.request(kCallHeaders)), Status.DEADLINE_EXCEEDED);
      } finally {
        s.destroy();
      }
    });
  });
});
