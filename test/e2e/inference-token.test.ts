/**
 * inference_token on a real server: the data plane over HTTP and gRPC needs one of its tokens, the
 * health checks and the management API do not, refusals are counted and never logged with a token,
 * and SageMaker mode refuses the key at start-up.
 */
import assert from 'node:assert/strict';
import { InterceptingCall, status as Status, type Interceptor } from '@grpc/grpc-js';
import { failure, grpcClients, unary, type GrpcClients } from '../../harness/grpc-clients';
import { runCliToExit } from '../../harness/cli-server';
import { request } from '../../harness/http-requests';
import { addModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, type TestServer } from '../../harness/test-server';
import { modelInferRequest } from '../../src/cli/grpc-calls';

const kNew = 'new-token-7f3a';
const kOld = 'old-token-91c2';
const kWrong = 'guessed-token-0000';
const row = Array(16).fill(1);
const v2 = { inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16], data: row }] };

/** Every call of a client carries `authorization: Bearer <token>`. */
function bearer(token: string): Interceptor {
  return (options, next) =>
    new InterceptingCall(next(options), {
      start(metadata, listener, start) {
        metadata.set('authorization', `Bearer ${token}`);
        start(metadata, listener);
      },
    });
}

describe('inference_token', () => {
  let t: TestServer;
  let anonymous: GrpcClients;
  let holder: GrpcClients;
  let wrong: GrpcClients;
  before(async () => {
    t = await startTestServer(`inference_token=${kNew}, ${kOld}\ngrpc_inference_port=0`);
    // The management API is management_token's (unset here): loading needs no inference token.
    const load = await request(`${t.managementUrl}/models`, {
      method: 'POST',
      json: { model_name: 'add', url: writeModelDir(t.store, 'add', addModel()) },
    });
    assert.equal(load.status, 200, load.text);
    const port = t.server.grpc!.port;
    anonymous = grpcClients(port);
    holder = grpcClients(port, { interceptors: [bearer(kOld)] });
    wrong = grpcClients(port, { interceptors: [bearer(kWrong)] });
  });
  after(async () => {
    for (const c of [anonymous, holder, wrong]) c.close();
    await t.close();
  });

  const calls: Array<[string, string, unknown?]> = [
    ['POST', '/models/add/invoke', { inputs: { x: [row] } }],
    ['POST', '/predictions/add', { inputs: { x: [row] } }],
    ['POST', '/invocations?model_name=add', { inputs: { x: [row] } }],
    ['POST', '/v2/models/add/infer', v2],
    ['POST', '/V2/Models/add/versions/1/infer/', v2],
    ['GET', '/v2'],
    ['GET', '/v2/models/add'],
    ['GET', '/v2/models/add/ready'],
  ];

  it('refuses every data-plane route over HTTP without one of its tokens: 401 with WWW-Authenticate: Bearer', async () => {
    for (const [method, path, json] of calls) {
      for (const headers of [{}, { authorization: `Bearer ${kWrong}` }, { authorization: kNew }] as Record<
        string,
        string
      >[]) {
        const res = await request(`${t.url}${path}`, { method, json, headers });
        assert.equal(res.status, 401, `${method} ${path} ${JSON.stringify(headers)}`);
        assert.equal(res.headers.get('www-authenticate'), 'Bearer');
        assert.match(res.text, /inference_token/);
      }
    }
  });

  it('serves them with any of the tokens (rotation: old and new both work)', async () => {
    for (const token of [kNew, kOld]) {
      for (const [method, path, json] of calls) {
        const res = await request(`${t.url}${path}`, { method, json, headers: { authorization: `Bearer ${token}` } });
        assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
      }
    }
  });

  it('leaves /ping, the OIP health checks and the management API open', async () => {
    for (const path of ['/ping', '/v2/health/live', '/v2/health/ready', '/models', '/models/add'])
      assert.equal((await request(`${t.url}${path}`)).status, 200, path);
  });

  it('refuses gRPC calls without the authorization metadata (UNAUTHENTICATED), but its health checks', async () => {
    const infer = modelInferRequest('add', v2);
    for (const c of [anonymous, wrong]) {
      for (const [client, method, req] of [
        [c.kserve, 'ModelInfer', infer],
        [c.kserve, 'ModelMetadata', { name: 'add' }],
        [c.kserve, 'ModelReady', { name: 'add' }],
        [c.kserve, 'ServerMetadata', {}],
        [
          c.torchserve,
          'Predictions',
          { model_name: 'add', input: { body: Buffer.from(JSON.stringify({ x: [row] })) } },
        ],
      ] as const) {
        const err = await failure(unary(client, method, req));
        assert.equal(err.code, Status.UNAUTHENTICATED, method);
        assert.match(err.details, /inference_token/);
      }
      assert.deepEqual(await unary(c.kserve, 'ServerLive'), { live: true });
      assert.deepEqual(await unary(c.kserve, 'ServerReady'), { ready: true });
      assert.equal((await unary(c.torchserve, 'Ping')).health.includes('Healthy'), true);
    }
    const answer = await unary(holder.kserve, 'ModelInfer', infer);
    assert.equal(answer.model_name, 'add');
    assert.deepEqual(await unary(holder.kserve, 'ModelReady', { name: 'add' }), { ready: true });
  });

  it('counts refusals in mme_unauthorized_requests_total and never logs a token', async () => {
    const count = async () => {
      const text = (await request(`${t.managementUrl}/metrics`)).text;
      return Number(/^mme_unauthorized_requests_total (\d+)/m.exec(text)?.[1]);
    };
    const before = await count();
    assert.ok(before > 0);
    await request(`${t.url}/models/add/invoke`, { method: 'POST', json: { inputs: { x: [row] } } });
    await failure(unary(anonymous.kserve, 'ModelMetadata', { name: 'add' }));
    assert.equal(await count(), before + 2);
    assert.ok(t.logs.some((l) => l.includes('MME_ERR_UNAUTHORIZED')));
    for (const line of t.logs) assert.doesNotMatch(line, new RegExp(`${kNew}|${kOld}|${kWrong}`));
  });

  it('is a start error in SageMaker mode, whose platform sends no token; the token is not printed', async () => {
    const r = await runCliToExit(`inference_token=${kNew}\n`, { SAGEMAKER_MULTI_MODEL: 'true' });
    assert.equal(r.code, 1);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /inference_token .*SAGEMAKER_MULTI_MODEL=true/);
    assert.doesNotMatch(r.stderr + r.stdout, new RegExp(kNew));
  });
});
