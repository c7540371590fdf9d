import assert from 'node:assert/strict';
import http from 'node:http';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { isLoopback } from '../../src/util/loopback';

/** fetch() will not send a forged Host header; node:http will. */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { host } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
      .on('error', reject);
  });
}

/** A request as a browser page sends it (node:http: fetch() sets its own Origin rules). */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body = '',
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, agent: false, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('listener guards', () => {
  it('recognises loopback names', () => {
    for (const h of ['localhost', '127.0.0.1', '127.8.9.1', '::1', '[::1]', 'LOCALHOST']) assert.ok(isLoopback(h), h);
    for (const h of ['evil.example', '10.0.0.1', '0.0.0.0', 'localhost.evil.example', '127.0.0.1.nip.io'])
      assert.ok(!isLoopback(h), h);
  });

  describe('on a loopback listener', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer();
    });
    after(async () => {
      await t.close();
    });

    it('refuses a request whose Host is not a loopback name (DNS rebinding)', async () => {
      assert.equal(await getWithHost(`${t.url}/models`, 'attacker.example:8080'), 403);
      assert.equal(await getWithHost(`${t.url}/models`, 'localhost:8080'), 200);
      assert.equal(await getWithHost(`${t.url}/ping`, '127.0.0.1'), 200);
    });
  });

  describe('against cross-site requests from a browser', () => {
    let t: TestServer;
    let dir: string;
    before(async () => {
      t = await startTestServer();
      dir = writeModelDir(t.store, 'add', addModel());
      assert.equal(
        (await request(`${t.url}/models`, { method: 'POST', json: { model_name: 'kept', url: dir } })).status,
        200,
      );
    });
    after(async () => {
      await t.close();
    });

    const evil = { origin: 'http://evil.example' };
    const listed = async () =>
      (await request(`${t.url}/models`)).body.models.map((m: { modelName: string }) => m.modelName).sort();

    it('refuses every state-changing request whose Origin is another site, on the management and invoke routes alike', async () => {
      const json = JSON.stringify({ model_name: 'x', url: dir });
      const cases: Array<[string, string, string, Record<string, string>, string]> = [
        ['a JSON load sent as text/plain', 'POST', '/models', { ...evil, 'content-type': 'text/plain' }, json],
        [
          'a load in the query string with a form body',
          'POST',
          `/models?model_name=x&url=${encodeURIComponent(dir)}`,
          { ...evil, 'content-type': 'application/x-www-form-urlencoded' },
          'a=b',
        ],
        [
          'a load with Origin: null (a sandboxed page)',
          'POST',
          '/models',
          { origin: 'null', 'content-type': 'application/json' },
          json,
        ],
        ['a scale', 'PUT', '/models/kept?min_worker=2', evil, ''],
        ['an unload', 'DELETE', '/models/kept', evil, ''],
        [
          'an invoke (it can load and evict)',
          'POST',
          '/models/kept/invoke',
          { ...evil, 'content-type': 'text/plain' },
          JSON.stringify({ inputs: { x: [Array(16).fill(0)] } }),
        ],
        [
          'an invoke through /invocations',
          'POST',
          '/invocations',
          { ...evil, 'content-type': 'text/plain', 'x-amzn-sagemaker-target-model': 'kept' },
          '{}',
        ],
      ];
      for (const [what, method, path, headers, body] of cases) {
        const res = await send(`${t.url}${path}`, method, headers, body);
        assert.equal(res.status, 403, `${what}: ${res.text}`);
        assert.match(JSON.parse(res.text).message, /not accepted from another site/, what);
      }
      assert.deepEqual(await listed(), ['kept']);
    });

    it("serves reads from any Origin, and writes from the server's own", async () => {
      assert.equal((await send(`${t.url}/models`, 'GET', evil)).status, 200);
      assert.equal((await send(`${t.url}/ping`, 'GET', evil)).status, 200);
      const own = { origin: t.url, 'content-type': 'application/json' };
      assert.equal(
        (await send(`${t.url}/models/kept/invoke`, 'POST', own, JSON.stringify({ inputs: { x: [Array(16).fill(0)] } })))
          .status,
        200,
      );
    });

    it('takes a POST /models body only as JSON (415 otherwise, unread), or the fields in the query string with no body', async () => {
      const json = JSON.stringify({ model_name: 'j', url: dir });
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const res = await send(
          `${t.url}/models?model_name=q&url=${encodeURIComponent(dir)}`,
          'POST',
          { 'content-type': type },
          json,
        );
        assert.equal(res.status, 415, `${type}: ${res.text}`);
        assert.match(
          JSON.parse(res.text).message,
          /^POST \/models takes a JSON body sent with Content-Type: application\/json \(this one is ".+"\), or its fields in the query string with no body\.$/,
        );
      }
      assert.equal((await send(`${t.url}/models`, 'POST', {}, json)).status, 415, 'an untyped body');
      assert.deepEqual(await listed(), ['kept']);
      assert.equal(
        (await send(`${t.url}/models`, 'POST', { 'content-type': 'application/json; charset=utf-8' }, json)).status,
        200,
      );
      assert.equal(
        (
          await send(`${t.url}/models?model_name=q&url=${encodeURIComponent(dir)}`, 'POST', {
            'content-type': 'application/x-www-form-urlencoded',
          })
        ).status,
        200,
      );
      assert.deepEqual(await listed(), ['j', 'kept', 'q']);
    });
  });

  describe('with management_token', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer('management_token=s3cret-token');
    });
    after(async () => {
      await t.close();
    });

    it('needs the bearer token for management, not for invoke or ping', async () => {
      const dir = writeModelDir(t.store, 'add', addModel());
      const body = { model_name: 'add', url: dir };
      const none = await request(`${t.url}/models`, { method: 'POST', json: body });
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('www-authenticate'), 'Bearer');
      assert.equal(
        (await request(`${t.url}/models`, { method: 'POST', json: body, headers: { authorization: 'Bearer wrong' } }))
          .status,
        401,
      );
      assert.equal(
        (
          await request(`${t.url}/models`, {
            method: 'POST',
            json: body,
            headers: { authorization: 'Bearer s3cret-token' },
          })
        ).status,
        200,
      );
      for (const [method, path] of [
        ['GET', '/models'],
        ['GET', '/models/add'],
        ['PUT', '/models/add?min_worker=1'],
        ['DELETE', '/models/add'],
      ]) {
        assert.equal((await request(`${t.url}${path}`, { method })).status, 401, `${method} ${path}`);
      }
      assert.equal(
        (await request(`${t.url}/models/add/invoke`, { method: 'POST', json: { inputs: { x: [Array(16).fill(0)] } } }))
          .status,
        200,
      );
      assert.equal((await request(`${t.url}/ping`)).status, 200);
      assert.equal(
        (await request(`${t.url}/models/add`, { method: 'DELETE', headers: { authorization: 'bearer s3cret-token' } }))
          .status,
        200,
      );
    });
  });

  describe('with both tokens on one port', () => {
    let t: TestServer;
    const management = { authorization: 'Bearer s3cret-token' };
    before(async () => {
      t = await startTestServer(
        'management_token=s3cret-token\ninference_token=data-token\nmetrics_per_model_dimension=true',
      );
      const dir = writeModelDir(t.store, 'tenant-secret-model', addModel());
      const body = { model_name: 'tenant-secret-model', url: dir };
      assert.equal((await request(`${t.url}/models`, { method: 'POST', json: body, headers: management })).status, 200);
    });
    after(async () => {
      await t.close();
    });

    it('serves /metrics only with management_token, as GET /models; /ping stays open', async () => {
      const invoke = await request(`${t.url}/models/tenant-secret-model/invoke`, {
        method: 'POST',
        json: { inputs: { x: [Array(16).fill(0)] } },
        headers: { authorization: 'Bearer data-token' },
      });
      assert.equal(invoke.status, 200);
      const refused: Record<string, string>[] = [
        {},
        { authorization: 'Bearer data-token' },
        { authorization: 'Bearer wrong' },
      ];
      for (const headers of refused) {
        for (const path of ['/metrics', '/models']) {
          const r = await request(`${t.url}${path}`, { headers });
          assert.equal(r.status, 401, `${path} with ${JSON.stringify(headers)}`);
          assert.equal(r.headers.get('www-authenticate'), 'Bearer');
          assert.doesNotMatch(r.text, /tenant-secret-model/);
        }
      }
      const metrics = await request(`${t.url}/metrics`, { headers: management });
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /model="tenant-secret-model"/);
      assert.equal((await request(`${t.url}/ping`)).status, 200);
    });
  });
});
