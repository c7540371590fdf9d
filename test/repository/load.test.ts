import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { tarBytes } from '../../harness/tar-archives';
import { addModel, identityModel } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { invoke, request } from '../../harness/http-requests';
import { startTestServer, tempDir, type TestServer } from '../../harness/test-server';
import { startCliServer } from '../../harness/cli-server';
import { skipBecause, userNamespaceProblem } from '../helpers/skip';
import { kBucket, kS3Env, LocalS3, setEnv } from '../../harness/local-s3';
import { startStallingS3 } from './stalling-s3';

const kInput = { inputs: { x: [Array(16).fill(0)] } };
const kOnes = [Array(16).fill(1)];
const kZeros = [Array(16).fill(0)];

const downloads = (t: TestServer, name: string) => t.logs.filter((l) => l.startsWith(`[${name}] downloaded `)).length;
const tgzOf = (onnx: Uint8Array) => gzipSync(tarBytes([{ path: 'model.onnx', data: onnx }]));

describe('model_repository: on-demand loads from S3', function () {
  let s3: LocalS3;
  let restoreEnv: () => void;
  let t: TestServer;
  let cacheDir: string;

  before(async () => {
    restoreEnv = setEnv(kS3Env);
    s3 = await LocalS3.start();
    cacheDir = tempDir('mme-disk-cache-');
    t = await startTestServer(
      s3.properties('repo', `model_cache_dir=${cacheDir}\nmodel_repository_ttl=1\nload_failure_cache_seconds=60`),
    );
  });
  after(async () => {
    await t?.close();
    await s3?.close();
    restoreEnv();
  });

  it('loads a model from a directory prefix on its first invoke', async () => {
    await s3.putModelDir('repo', 'dir-model', addModel(), { 'model-config.json': '{}' });
    const res = await invoke(t, 'dir-model', kInput);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.outputs.y, kOnes);
    const described = await request(`${t.managementUrl}/models/dir-model`);
    assert.match(described.text, /s3:\/\/models\/repo\/dir-model/);
    assert.ok(fs.existsSync(path.join(cacheDir, 'dir-model', 'model', 'model-config.json')));
  });

  it('loads a model from a .tar.gz, and from a .tgz', async () => {
    await s3.put('repo/tgz-model.tar.gz', tgzOf(identityModel('float32')));
    await s3.put('repo/short-model.tgz', tgzOf(addModel()));
    const res = await invoke(t, 'tgz-model', kInput);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.outputs.y, kZeros);
    assert.deepEqual((await invoke(t, 'short-model', kInput)).body.outputs.y, kOnes);
  });

  it('downloads a cold model once for 20 concurrent invokes', async () => {
    await s3.putModelDir('repo', 'cold', addModel());
    const answers = await Promise.all(Array.from({ length: 20 }, () => invoke(t, 'cold', kInput)));
    assert.deepEqual(
      answers.map((r) => r.status),
      Array(20).fill(200),
    );
    assert.equal(downloads(t, 'cold'), 1);
    const metrics = await request(`${t.managementUrl}/metrics`);
    assert.match(metrics.text, /^mme_repository_downloads_total [1-9]/m);
    assert.match(metrics.text, /^mme_repository_download_bytes_total [1-9]/m);
    assert.match(metrics.text, /^mme_model_downloading_time_seconds_count [1-9]/m);
    assert.match(metrics.text, /^mme_model_disk_cache_hits_total /m);
  });

  it('picks up a changed artifact once model_repository_ttl has passed; an unchanged one is not downloaded again', async () => {
    await s3.put('repo/changing.tar.gz', tgzOf(identityModel('float32')));
    assert.deepEqual((await invoke(t, 'changing', kInput)).body.outputs.y, kZeros);
    await s3.put('repo/changing.tar.gz', tgzOf(addModel()));
    // A loaded model keeps serving its copy; each unload lets the next invoke load from the cache.
    await waitFor(
      async () => {
        assert.equal((await request(`${t.managementUrl}/models/changing`, { method: 'DELETE' })).status, 200);
        return JSON.stringify((await invoke(t, 'changing', kInput)).body.outputs?.y) === JSON.stringify(kOnes);
      },
      'the changed archive to be served',
      30_000,
      100,
    );
    assert.equal(downloads(t, 'changing'), 2);

    // Unchanged after the TTL: revalidated with If-None-Match (304), served from disk.
    const validatedAt = JSON.parse(fs.readFileSync(path.join(cacheDir, 'changing', 'meta.json'), 'utf8'))
      .validatedAt as number;
    await waitFor(
      async () => {
        await request(`${t.managementUrl}/models/changing`, { method: 'DELETE' });
        assert.equal((await invoke(t, 'changing', kInput)).status, 200);
        return (
          JSON.parse(fs.readFileSync(path.join(cacheDir, 'changing', 'meta.json'), 'utf8')).validatedAt > validatedAt
        );
      },
      'a revalidation',
      30_000,
      100,
    );
    assert.equal(downloads(t, 'changing'), 2);
  });

  it('answers 404 for a model the repository does not have, and keeps that answer (load_failure_cache_seconds)', async () => {
    const res = await invoke(t, 'not-there', kInput);
    assert.equal(res.status, 404, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_MODEL_NOT_FOUND');
    assert.match(
      res.body.message,
      /not-there \(not in the model store, nor in model_repository as a directory, \.tar\.gz or \.tgz\)/,
    );
    await s3.putModelDir('repo', 'not-there', addModel());
    assert.equal(
      (await invoke(t, 'not-there', kInput)).status,
      404,
      'the negative cache answers without asking the store',
    );
  });

  it('answers 400 for a truncated archive', async () => {
    const whole = tgzOf(addModel());
    await s3.put('repo/cut.tar.gz', whole.subarray(0, Math.floor(whole.length / 2)));
    const res = await invoke(t, 'cut', kInput);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_INVALID_MODEL');
    assert.doesNotMatch(res.text, new RegExp(cacheDir));
    assert.ok(!fs.existsSync(path.join(cacheDir, 'cut')), 'a copy that does not load is not kept');
  });

  it('answers 400 for a key that is both a file and a directory, for that model alone (test/repository/object-paths.test.ts has the rest)', async () => {
    await s3.putModelDir('repo', 'clash', addModel());
    await s3.put('repo/clash/model.onnx/inner', Buffer.from('x'));
    const res = await invoke(t, 'clash', kInput);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.errorCode, 'MME_ERR_INVALID_MODEL');
    assert.match(res.body.message, /"model\.onnx" that is both a file and the directory of other objects/);
    assert.equal(res.headers.get('retry-after'), null);
    // Not taken for a store outage: the next model loads from the same store at once.
    await s3.putModelDir('repo', 'after-bad-keys', addModel());
    assert.equal((await invoke(t, 'after-bad-keys', kInput)).status, 200);
  });

  it('answers 503 when the store refuses the credentials, with its error code only in the log', async () => {
    const restore = setEnv({ AWS_ACCESS_KEY_ID: 'WRONGKEY', AWS_SECRET_ACCESS_KEY: 'wrong' });
    const refused = await startTestServer(s3.properties('repo', `model_cache_dir=${tempDir('mme-disk-cache-')}`));
    try {
      await s3.putModelDir('repo', 'secret', addModel());
      const res = await invoke(refused, 'secret', kInput);
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.errorCode, 'MME_ERR_REPOSITORY_UNAVAILABLE');
      assert.match(res.body.message, /refused the server's credentials/);
      assert.doesNotMatch(res.text, /InvalidAccessKeyId|WRONGKEY/);
      assert.ok(
        refused.logs.some((l) => l.includes('InvalidAccessKeyId')),
        refused.logs.join('\n'),
      );
      assert.match((await request(`${refused.managementUrl}/metrics`)).text, /^mme_repository_errors_total 1/m);
    } finally {
      await refused.close();
      restore();
    }
  });

  it('answers 504 when the store stalls mid-body, and keeps no partial file', async () => {
    const stalling = await startStallingS3('repo/stuck.tar.gz', 1_000_000, 64 * 1024);
    const dir = tempDir('mme-disk-cache-');
    const stuck = await startTestServer(
      `model_repository=s3://${kBucket}/repo\nmodel_repository_endpoint=${stalling.url}\nmodel_repository_timeout=1\nmodel_cache_dir=${dir}`,
    );
    try {
      const res = await invoke(stuck, 'stuck', kInput);
      assert.equal(res.status, 504, res.text);
      assert.equal(res.body.errorCode, 'MME_ERR_REPOSITORY_TIMEOUT');
      assert.deepEqual(fs.readdirSync(dir), []);
    } finally {
      await stuck.close();
      await stalling.close();
    }
  });

  it('serves the copy on disk when revalidation cannot reach the store', async () => {
    const own = await LocalS3.start();
    const server = await startTestServer(
      own.properties(
        'repo',
        `model_cache_dir=${tempDir('mme-disk-cache-')}\nmodel_repository_ttl=0\nmodel_repository_timeout=2`,
      ),
    );
    try {
      await own.putModelDir('repo', 'kept', addModel());
      assert.equal((await invoke(server, 'kept', kInput)).status, 200);
      assert.equal((await request(`${server.managementUrl}/models/kept`, { method: 'DELETE' })).status, 200);
      await own.close();
      const res = await invoke(server, 'kept', kInput);
      assert.equal(res.status, 200, res.text);
      assert.ok(
        server.logs.some((l) => l.includes('revalidation (serving the copy on disk)')),
        server.logs.join('\n'),
      );
    } finally {
      await server.close();
    }
  });

  it('evicts the least recently used model that is not loaded when the disk cache is at its limit', async () => {
    const dir = tempDir('mme-disk-cache-');
    const small = await startTestServer(
      s3.properties('lru', `model_cache_dir=${dir}\nmodel_cache_disk_mb=1\nload_failure_cache_seconds=0`),
    );
    const padding = Buffer.alloc(400 * 1024, 7);
    try {
      for (const name of ['a', 'b', 'c']) await s3.putModelDir('lru', name, addModel(), { 'padding.bin': padding });
      assert.equal((await invoke(small, 'a', kInput)).status, 200);
      assert.equal((await invoke(small, 'b', kInput)).status, 200);
      // a and b are loaded: neither may go, and c does not fit beside them.
      const full = await invoke(small, 'c', kInput);
      assert.equal(full.status, 503, full.text);
      assert.match(full.body.message, /model_cache_disk_mb/);
      assert.deepEqual(fs.readdirSync(dir).sort(), ['a', 'b']);
      // b unloaded, then a: b is the least recently used model not loaded.
      assert.equal((await request(`${small.managementUrl}/models/b`, { method: 'DELETE' })).status, 200);
      assert.equal((await request(`${small.managementUrl}/models/a`, { method: 'DELETE' })).status, 200);
      assert.equal((await invoke(small, 'c', kInput)).status, 200);
      assert.deepEqual(fs.readdirSync(dir).sort(), ['a', 'c']);
    } finally {
      await small.close();
    }
  });

  it('answers a full model_cache_dir volume with 507 MME_ERR_INSUFFICIENT_STORAGE, not the store as unavailable, and forgets it', async function () {
    // An unprivileged user and mount namespace puts a 256 KiB tmpfs under model_cache_dir, far below model_cache_disk_mb.
    const noNamespaces = userNamespaceProblem();
    if (noNamespaces) skipBecause(this, 'user-namespaces', noNamespaces);
    const dir = tempDir('mme-disk-cache-');
    await s3.putModelDir('full', 'big', addModel(), { 'padding.bin': Buffer.alloc(1024 * 1024, 7) });
    await s3.putModelDir('full', 'small', addModel());
    const server = await startCliServer(
      s3.properties('full', `model_cache_dir=${dir}\nload_failure_cache_seconds=60`),
      {
        env: { CACHE: dir },
        launcher: ['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs -o size=256k tmpfs "$CACHE" && exec "$@"', 'sh'],
      },
    );
    try {
      const full = await invoke(server, 'big', kInput);
      assert.equal(full.status, 507, full.text);
      assert.equal(full.body.errorCode, 'MME_ERR_INSUFFICIENT_STORAGE');
      assert.match(
        full.body.message,
        /^downloading model big failed: no space is left on the disk \(ENOSPC\) of model_cache_dir\./,
      );
      // A disk, not the model: not remembered, so the next invoke tries (and fails) again.
      const again = await invoke(server, 'big', kInput);
      assert.doesNotMatch(again.body.message, /failed to load recently/);
      assert.equal(again.body.errorCode, 'MME_ERR_INSUFFICIENT_STORAGE');
      // The partial download is gone: the tmpfs (seen through the server's /proc root) holds room for the next model.
      assert.equal((await invoke(server, 'small', kInput)).status, 200);
      assert.deepEqual(
        fs.readdirSync(`/proc/${server.pid}/root${dir}`).filter((d) => d !== 'small'),
        [],
      );
    } finally {
      await server.stop();
    }
  });
});
