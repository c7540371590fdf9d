import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { checkConfig, findNginx, MODEL_KEY_CONF, Nginx, routerConfig, type Balancing } from '../../scripts/fleet/nginx';
import { freePort } from '../helpers/cli';
import { tempDir } from '../helpers/server';

const kNginxConf = path.join(__dirname, '..', '..', '..', 'deploy', 'nginx', 'nginx.conf');

/** Replicas that answer with their own index. */
async function replicas(n: number): Promise<{ servers: http.Server[]; upstreams: string[] }> {
  const servers = await Promise.all(Array.from({ length: n }, async (_, i) => {
    const s = http.createServer((req, res) => { req.resume(); req.on('end', () => res.end(String(i))); });
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return s;
  }));
  return { servers, upstreams: servers.map((s) => `127.0.0.1:${(s.address() as AddressInfo).port}`) };
}

describe('deploy/nginx: model-name routing through real nginx', function () {
  const bin = findNginx();
  before(function () {
    if (!bin) {
      console.log('    (skipped: nginx is not installed; install it, e.g. `apt-get install nginx`, to run this test)');
      this.skip();
    }
  });

  let fleet: Awaited<ReturnType<typeof replicas>>;
  let nginx: Nginx | undefined;
  let base: string;
  beforeEach(async () => { fleet = await replicas(3); });
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
    const res = await fetch(`${base}${urlPath}`, { method: 'POST', body: '[]', headers });
    assert.equal(res.headers.get('x-upstream') !== null, true);
    return res.text();
  }

  it('sends a model to one replica whichever way it is named, and spreads models over all replicas', async () => {
    await route('consistent-hash');
    const owners = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const m = `model-${i}`;
      const viaPath = await replicaFor(`/models/${m}/invoke`);
      assert.equal(await replicaFor('/invocations', { 'X-Amzn-SageMaker-Target-Model': `tenant/a/${m}.tar.gz` }), viaPath, `${m}: TargetModel path`);
      assert.equal(await replicaFor('/invocations', { 'X-Amzn-SageMaker-Target-Model': m }), viaPath, `${m}: TargetModel name`);
      assert.equal(await replicaFor('/invocations', { serve_multiplexed_model_id: m }), viaPath, `${m}: Ray header`);
      assert.equal(await replicaFor(`/predictions/${m}`), viaPath, `${m}: /predictions`);
      assert.equal(await replicaFor(`/v2/models/${m}/infer`), viaPath, `${m}: OIP v2 infer`);
      assert.equal(await replicaFor(`/v2/models/${m}/versions/1/infer`), viaPath, `${m}: OIP v2 infer of a version`);
      // gRPC's model is inside the message; its target-model metadata is an HTTP/2 header nginx reads like any other.
      assert.equal(await replicaFor('/inference.GRPCInferenceService/ModelInfer', { 'target-model': m }), viaPath, `${m}: gRPC target-model`);
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

  it('nginx -t accepts deploy/nginx/nginx.conf (with the compose host names made local)', () => {
    const dir = tempDir('mme-nginx-');
    const file = path.join(dir, 'nginx.conf');
    const conf = fs.readFileSync(kNginxConf, 'utf8')
      .replace('/etc/nginx/mme/model-key.conf', MODEL_KEY_CONF)
      .replace(/server mme-(\d):8080/g, (_, n: string) => `server 127.0.0.1:${18080 + Number(n)}`)
      .replace('listen 8080;', 'listen 127.0.0.1:18080;');
    fs.writeFileSync(file, `pid ${path.join(dir, 'nginx.pid')};\n${conf}`);
    assert.equal(checkConfig(bin!, file, dir), null);
  });
});
