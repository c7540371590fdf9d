import assert from 'node:assert/strict';
import http from 'node:http';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { request } from '../../harness/http-requests';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { isLoopback } from '../../src/util/loopback';

/** fetch() will not send a forged Host header; node:http will. */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    }).on('error', reject);
  });
}

describe('listener guards', () => {
  it('recognises loopback names', () => {
    for (const h of ['localhost', '127.0.0.1', '127.8.9.1', '::1', '[::1]', 'LOCALHOST']) assert.ok(isLoopback(h), h);
    for (const h of ['evil.example', '10.0.0.1', '0.0.0.0', 'localhost.evil.example', '127.0.0.1.nip.io']) assert.ok(!isLoopback(h), h);
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
      assert.equal((await request(`${t.url}/models`, { method: 'POST', json: body, headers: { authorization: 'Bearer wrong' } })).status, 401);
      assert.equal((await request(`${t.url}/models`, { method: 'POST', json: body, headers: { authorization: 'Bearer s3cret-token' } })).status, 200);
      for (const [method, path] of [['GET', '/models'], ['GET', '/models/add'], ['PUT', '/models/add?min_worker=1'], ['DELETE', '/models/add']]) {
        assert.equal((await request(`${t.url}${path}`, { method })).status, 401, `${method} ${path}`);
      }
      assert.equal((await request(`${t.url}/models/add/invoke`, { method: 'POST', json: { inputs: { x: [Array(16).fill(0)] } } })).status, 200);
      assert.equal((await request(`${t.url}/ping`)).status, 200);
      assert.equal((await request(`${t.url}/models/add`, { method: 'DELETE', headers: { authorization: 'bearer s3cret-token' } })).status, 200);
    });
  });
});
