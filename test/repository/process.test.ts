import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { tarBytes } from '../../harness/tar-archives';
import { addModel } from '../../harness/onnx-models';
import { startCliServer } from '../../harness/cli-server';
import { waitFor } from '../../harness/process-probes';
import { invoke } from '../../harness/http-requests';
import { tempDir } from '../../harness/test-server';
import { kBucket, kS3Env, LocalS3 } from '../../harness/local-s3';
import { startStallingS3 } from './stalling-s3';

const kInput = { inputs: { x: [Array(16).fill(0)] } };
const kMiB = 2 ** 20;

/** The one file under `dir`'s .tmp-* directories, in bytes (0 when there is none yet). */
function partialBytes(dir: string): number {
  let total = 0;
  for (const d of fs.readdirSync(dir).filter((n) => n.startsWith('.tmp-'))) {
    for (const f of fs.readdirSync(path.join(dir, d))) total += fs.statSync(path.join(dir, d, f)).size;
  }
  return total;
}

describe('model_repository: the server process', function () {
  this.timeout(120_000);
  let s3: LocalS3;

  before(async () => {
    s3 = await LocalS3.start();
  });
  after(async () => {
    await s3?.close();
  });

  it('leaves no partial model when it is killed mid-download, and cleans up at the next start', async () => {
    const cacheDir = tempDir('mme-disk-cache-');
    const stalling = await startStallingS3('repo/crashy.tar.gz', 10 * kMiB, kMiB);
    const first = await startCliServer(
      `model_repository=s3://${kBucket}/repo\nmodel_repository_endpoint=${stalling.url}\nmodel_repository_timeout=600\nmodel_cache_dir=${cacheDir}`,
      { env: kS3Env },
    );
    try {
      const pending = invoke(first, 'crashy', kInput).catch(() => null);
      await waitFor(() => partialBytes(cacheDir) >= kMiB, 'the first MiB to reach the disk', 30_000);
      first.child.kill('SIGKILL');
      await first.exited;
      await pending;
    } finally {
      await first.stop();
      await stalling.close();
    }
    assert.ok(!fs.existsSync(path.join(cacheDir, 'crashy')), 'only the temporary download may be left');

    await s3.put('repo/crashy.tar.gz', gzipSync(tarBytes([{ path: 'model.onnx', data: addModel() }])));
    const second = await startCliServer(s3.properties('repo', `model_cache_dir=${cacheDir}`), { env: kS3Env });
    try {
      const res = await invoke(second, 'crashy', kInput);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(fs.readdirSync(cacheDir), ['crashy']);
    } finally {
      await second.stop();
    }
  });
});
