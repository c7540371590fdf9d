import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { Metadata, type ServiceError } from '@grpc/grpc-js';
import { findHaproxy, Haproxy, inFlight, localHaproxyConfig } from '../../harness/routers/haproxy';
import { freePorts } from '../../harness/cli-server';
import { f32 } from '../../harness/float32';
import { waitFor } from '../../harness/process-probes';
import { grpcClients, type GrpcClients } from '../../harness/grpc-clients';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { skipBecause } from '../helpers/skip';

const kModels = 12;
const kRow = Array.from({ length: 16 }, (_, i) => i);
const kInvokeBody = JSON.stringify({ inputs: { input: [kRow] } });
const kV2Body = JSON.stringify({ inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16], data: kRow }] });
/** Requests for one model held in flight at once: four times the three replicas' mean share of one. */
const kHeld = 12;

/** One POST through the router; resolves with the status and the replica that answered (X-Upstream, HAProxy's server name). */
function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; replica: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, replica: String(res.headers['x-upstream']) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('deploy/haproxy: bounded-load consistent hashing on the model through real HAProxy and real servers', function () {
  const bin = findHaproxy();
  let servers: TestServer[] = [];
  let haproxy: Haproxy | undefined;
  let base: string;
  let clients: GrpcClients;
  let statsSocket: string;

  before(async function () {
    if (!bin)
      skipBecause(
        this,
        'haproxy',
        'haproxy is not installed; install it, e.g. `apt-get install haproxy`, to run this test',
      );
    const store = tempDir('mme-haproxy-store-');
    for (let i = 0; i < kModels; i++) writeModelDir(store, `m${i}`, mlpModel({ sizes: [16, 32, 4], seed: i + 1 }));
    // Five ports at once, all different: the replicas' gRPC ports, then the router's HTTP and gRPC.
    const [httpPort, grpcPort, ...grpcPorts] = await freePorts(5);
    // Self-managed cache mode: each replica loads a model on its first request for it.
    servers = await Promise.all(
      grpcPorts.map((p) => startTestServer(`model_cache=on\ngrpc_inference_port=${p}`, { store })),
    );
    const dir = tempDir('mme-haproxy-');
    statsSocket = path.join(dir, 'admin.sock');
    haproxy = await Haproxy.start(
      bin,
      dir,
      httpPort,
      localHaproxyConfig({
        httpPort,
        grpcPort,
        replicas: servers.map((s, i) => ({ httpPort: Number(new URL(s.url).port), grpcPort: grpcPorts[i] })),
        statsSocket,
        // The deployed factor is chosen by the bench; the bound checked below is this one's.
        balanceFactor: 125,
      }),
    );
    base = `http://127.0.0.1:${httpPort}`;
    clients = grpcClients(grpcPort);
  });

  after(async () => {
    clients?.close();
    await haproxy?.stop();
    await Promise.all(servers.map((s) => s.close()));
  });

  /** The replica a gRPC ModelInfer for `model` reached, naming the model in `target-model` as a client behind a router does. */
  function grpcReplicaFor(model: string): Promise<string> {
    const metadata = new Metadata();
    metadata.set('target-model', model);
    return new Promise((resolve, reject) => {
      let replica = '';
      const call = clients.kserve.ModelInfer(
        {
          model_name: model,
          inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 16] }],
          raw_input_contents: [f32(kRow)],
        },
        metadata,
        (err: ServiceError | null) => (err ? reject(err) : resolve(replica)),
      );
      call.on('metadata', (md: Metadata) => {
        replica = String(md.get('x-upstream')[0]);
      });
    });
  }

  it('keeps each model on one replica whichever way it is named (path, TargetModel, Ray header, /v2, gRPC target-model) and spreads models over all replicas', async () => {
    const owners = new Set<string>();
    for (let i = 0; i < kModels; i++) {
      const m = `m${i}`;
      const viaPath = await post(`${base}/models/${m}/invoke`, kInvokeBody);
      assert.equal(viaPath.status, 200, `${m}: /models/${m}/invoke`);
      const same = async (what: string, r: Promise<{ status: number; replica: string }>) => {
        const { status, replica } = await r;
        assert.deepEqual([status, replica], [200, viaPath.replica], `${m}: ${what}`);
      };
      await same(
        'TargetModel path',
        post(`${base}/invocations`, kInvokeBody, { 'X-Amzn-SageMaker-Target-Model': `tenant/a/${m}.tar.gz` }),
      );
      await same('Ray header', post(`${base}/invocations`, kInvokeBody, { serve_multiplexed_model_id: m }));
      await same('OIP v2 infer', post(`${base}/v2/models/${m}/infer`, kV2Body));
      // Both backends list the replicas in the same order, so their rings agree: gRPC finds the model where HTTP loaded it.
      assert.equal(await grpcReplicaFor(m), viaPath.replica, `${m}: gRPC target-model`);
      owners.add(viaPath.replica);
    }
    assert.deepEqual([...owners].sort(), ['mme-1', 'mme-2', 'mme-3']);
    // Each model was loaded by the one replica that served it: no replica loaded another's model.
    const loaded = await Promise.all(
      servers.map(
        async (s) =>
          ((await (await fetch(`${s.url}/models`)).json()) as { models: { modelName: string }[] }).models.length,
      ),
    );
    assert.equal(
      loaded.reduce((a, b) => a + b, 0),
      kModels,
      `models loaded per replica: ${loaded.join(', ')}`,
    );
  });

  it('sends a model to its replica while under the bound, and past the bound spreads its requests over the others', async () => {
    const model = 'm0';
    const url = `${base}/models/${model}/invoke`;
    const home = (await post(url, kInvokeBody)).replica;
    for (let i = 0; i < 5; i++)
      assert.equal((await post(url, kInvokeBody)).replica, home, 'one at a time: under the bound');

    // Requests held in flight (the body not yet sent) count against their replica's bound until they finish.
    const held = Array.from({ length: kHeld }, () => {
      let resolveReplica!: (r: { status: number; replica: string }) => void;
      const answered = new Promise<{ status: number; replica: string }>((resolve) => (resolveReplica = resolve));
      const req = http.request(
        url,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(kInvokeBody) },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolveReplica({ status: res.statusCode ?? 0, replica: String(res.headers['x-upstream']) }),
          );
        },
      );
      req.flushHeaders();
      return { req, answered };
    });
    // Every one placed (each while the ones before it were held) before any finishes.
    const total = async () => [...(await inFlight(statsSocket, 'mme')).values()].reduce((a, b) => a + b, 0);
    await waitFor(async () => (await total()) >= kHeld, `HAProxy to place all ${kHeld} held requests`, 60_000);
    const replicas: string[] = [];
    for (const { req, answered } of held) {
      req.end(kInvokeBody);
      const { status, replica } = await answered;
      assert.equal(status, 200);
      replicas.push(replica);
    }
    const share = new Map<string, number>();
    for (const r of replicas) share.set(r, (share.get(r) ?? 0) + 1);
    assert.ok(share.size > 1, `${kHeld} requests in flight for one model all went to ${home}`);
    // 125 %: no replica holds more than 1.25 × the mean in flight (plus the one being placed).
    for (const [r, n] of share) assert.ok(n <= Math.ceil((1.25 * (kHeld + 1)) / 3), `${r} took ${n} of ${kHeld}`);
    assert.equal(
      Math.max(...share.values()),
      share.get(home),
      `the home replica takes the largest share: ${[...share]}`,
    );
  });
});
