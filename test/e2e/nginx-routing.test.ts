import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Metadata, Server, ServerCredentials, type ServiceError } from '@grpc/grpc-js';
import { findNginx, MODEL_KEY_CONF, Nginx, routerConfig, type Balancing } from '../../harness/routers/nginx';
import { connect, type GrpcClients } from '../../src/cli/grpc-calls';
import { serviceDefinitions } from '../../src/grpc/protos';
import { freePort, freePorts } from '../../harness/cli-server';
import { tempDir } from '../../harness/test-server';
import { skipBecause } from '../helpers/skip';

const kNginxDir = path.join(__dirname, '..', '..', '..', 'deploy', 'nginx');

/** Replicas that answer with their own index. */
async function replicas(n: number): Promise<{ servers: http.Server[]; upstreams: string[] }> {
  const servers = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const s = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => res.end(String(i)));
      });
      await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
      return s;
    }),
  );
  return { servers, upstreams: servers.map((s) => `127.0.0.1:${(s.address() as AddressInfo).port}`) };
}

/** gRPC replicas (KServe's service) whose ModelMetadata answers with the replica's index as the name. */
async function grpcReplicas(n: number): Promise<{ stop(): void; upstreams: string[] }> {
  // One grpc-js Server can bind several ports, but each call must know its replica: one Server each.
  const servers = Array.from({ length: n }, (_, i) => {
    const s = new Server();
    s.addService(serviceDefinitions().kserve.service, {
      ModelMetadata: (_call: unknown, cb: (err: null, res: object) => void) =>
        cb(null, { name: String(i), platform: 'replica' }),
    });
    return s;
  });
  const ports = await Promise.all(
    servers.map(
      (s) =>
        new Promise<number>((resolve, reject) => {
          s.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, port) =>
            err ? reject(err) : resolve(port),
          );
        }),
    ),
  );
  return {
    stop: () => servers.forEach((s) => s.forceShutdown()),
    upstreams: ports.map((p) => `127.0.0.1:${p}`),
  };
}

/** The replica a gRPC call for `model` reached, naming the model in `target-model` as a client behind a router does. */
function grpcReplicaFor(clients: GrpcClients, model: string): Promise<string> {
  const metadata = new Metadata();
  metadata.set('target-model', model);
  return new Promise((resolve, reject) => {
    clients.kserve.ModelMetadata({ name: model }, metadata, (err: ServiceError | null, res: { name: string }) =>
      err ? reject(err) : resolve(res.name),
    );
  });
}

/**
 * deploy/nginx/nginx.conf as shipped, run in the foreground on loopback: only its listen ports,
 * the /etc/nginx/mme/ include directory, the replica lists (replicas-*.conf) and, so that it runs
 * without root, the access log and temporary files are local.
 */
function deployedConfig(
  dir: string,
  httpPort: number,
  grpcPort: number,
  http: readonly string[],
  grpc: readonly string[],
): string {
  fs.mkdirSync(path.join(dir, 'logs'));
  fs.copyFileSync(MODEL_KEY_CONF, path.join(dir, 'model-key.conf'));
  fs.writeFileSync(path.join(dir, 'replicas-http.conf'), http.map((u) => `server ${u};\n`).join(''));
  fs.writeFileSync(path.join(dir, 'replicas-grpc.conf'), grpc.map((u) => `server ${u};\n`).join(''));
  const conf = fs.readFileSync(path.join(kNginxDir, 'nginx.conf'), 'utf8');
  const local = conf
    .replaceAll('/etc/nginx/mme/', `${dir}/`)
    .replace(/^(\s*)listen 8080;$/m, `$1listen 127.0.0.1:${httpPort};`)
    .replace(/^(\s*)listen 7070 http2;$/m, `$1listen 127.0.0.1:${grpcPort} http2;`)
    .replace(
      /^http \{$/m,
      `http {\n  access_log ${dir}/logs/access.log;\n` +
        ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};\n`).join(''),
    );
  assert.notEqual(local.includes('listen 8080') || local.includes('listen 7070'), true, 'both listeners made local');
  return `daemon off;\npid ${path.join(dir, 'nginx.pid')};\nerror_log stderr notice;\n${local}`;
}

describe('deploy/nginx: model-name routing through real nginx', function () {
  const bin = findNginx();
  before(function () {
    if (!bin)
      skipBecause(this, 'nginx', 'nginx is not installed; install it, e.g. `apt-get install nginx`, to run this test');
  });

  let fleet: Awaited<ReturnType<typeof replicas>>;
  let nginx: Nginx | undefined;
  let base: string;
  beforeEach(async () => {
    fleet = await replicas(3);
  });
  afterEach(async () => {
    await nginx?.stop();
    nginx = undefined;
    for (const s of fleet.servers) s.closeAllConnections();
    await Promise.all(fleet.servers.map((s) => new Promise((r) => s.close(r))));
  });

  async function route(balancing: Balancing): Promise<void> {
    const dir = tempDir('mme-nginx-');
    const port = await freePort();
    nginx = await Nginx.start(bin!, dir, port, routerConfig({ dir, port, upstreams: fleet.upstreams, balancing }));
    base = `http://127.0.0.1:${port}`;
  }

  async function replicaFor(urlPath: string, headers: Record<string, string> = {}): Promise<string> {
    // Each replica answers with its index.
    const res = await fetch(`${base}${urlPath}`, { method: 'POST', body: '[]', headers });
    return res.text();
  }

  it('sends a model to one replica whichever way it is named, and spreads models over all replicas', async () => {
    await route('consistent-hash');
    const owners = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const m = `model-${i}`;
      const viaPath = await replicaFor(`/models/${m}/invoke`);
      assert.equal(
        await replicaFor('/invocations', { 'X-Amzn-SageMaker-Target-Model': `tenant/a/${m}.tar.gz` }),
        viaPath,
        `${m}: TargetModel path`,
      );
      assert.equal(
        await replicaFor('/invocations', { 'X-Amzn-SageMaker-Target-Model': m }),
        viaPath,
        `${m}: TargetModel name`,
      );
      assert.equal(await replicaFor('/invocations', { serve_multiplexed_model_id: m }), viaPath, `${m}: Ray header`);
      assert.equal(await replicaFor(`/predictions/${m}`), viaPath, `${m}: /predictions`);
      assert.equal(await replicaFor(`/v2/models/${m}/infer`), viaPath, `${m}: OIP v2 infer`);
      assert.equal(await replicaFor(`/v2/models/${m}/versions/1/infer`), viaPath, `${m}: OIP v2 infer of a version`);
      // gRPC's model is inside the message; its target-model metadata is an HTTP/2 header nginx reads like any other.
      assert.equal(
        await replicaFor('/inference.GRPCInferenceService/ModelInfer', { 'target-model': m }),
        viaPath,
        `${m}: gRPC target-model`,
      );
      owners.add(viaPath);
    }
    assert.deepEqual([...owners].sort(), ['0', '1', '2']);
  });

  it('round robin, the baseline, sends one model to every replica', async () => {
    await route('round-robin');
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add(await replicaFor('/models/m/invoke'));
    assert.equal(seen.size, 3);
  });

  it('deploy/nginx/nginx.conf itself, on local replicas: HTTP and gRPC (target-model metadata) each keep a model on one replica', async () => {
    const grpcFleet = await grpcReplicas(3);
    try {
      const dir = tempDir('mme-nginx-');
      const [httpPort, grpcPort] = await freePorts(2);
      nginx = await Nginx.start(
        bin!,
        dir,
        httpPort,
        deployedConfig(dir, httpPort, grpcPort, fleet.upstreams, grpcFleet.upstreams),
      );
      base = `http://127.0.0.1:${httpPort}`;
      const clients = connect(`127.0.0.1:${grpcPort}`);
      try {
        const grpcOwners = new Set<string>();
        for (let i = 0; i < 30; i++) {
          const m = `model-${i}`;
          const viaPath = await replicaFor(`/models/${m}/invoke`);
          assert.equal(await replicaFor(`/v2/models/${m}/infer`), viaPath, `${m}: OIP v2 infer`);
          const viaGrpc = await grpcReplicaFor(clients, m);
          assert.equal(await grpcReplicaFor(clients, m), viaGrpc, `${m}: gRPC, twice`);
          grpcOwners.add(viaGrpc);
        }
        assert.deepEqual([...grpcOwners].sort(), ['0', '1', '2'], 'gRPC models spread over every replica');
      } finally {
        clients.close();
      }
    } finally {
      grpcFleet.stop();
    }
  });
});
