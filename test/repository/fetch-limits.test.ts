/**
 * A repository fetch cannot hold its load slot for ever (issue 49, C3): model_repository_timeout
 * bounds only silence, so a store that answers empty listing pages with IsTruncated forever, or
 * one that never finishes, is bounded by a cap on listing pages and by the load's load_timeout.
 * The store is a tiny local S3-speaking server; nothing here waits on a timer of its own.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { invoke, loadModels } from '../../harness/http-requests';
import { addModel } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { startTestServer, tempDir } from '../../harness/test-server';
import { kBucket, kS3Env, setEnv } from '../../harness/local-s3';
import { kMaxListPages } from '../../src/repository/object-store';
import { LocalAwsEndpoint } from '../helpers/aws-endpoint';

const kInput = { inputs: { x: [Array(16).fill(0)] } };

describe('model_repository: a fetch has a page cap and an overall deadline', function () {
  let restoreEnv: () => void;
  before(() => (restoreEnv = setEnv(kS3Env)));
  after(() => restoreEnv());

  it(`stops a listing that answers empty truncated pages forever after ${kMaxListPages} pages, naming the cap`, async () => {
    let lists = 0;
    const endless = await LocalAwsEndpoint.start((_req, res) => {
      lists++;
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(
        `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>true</IsTruncated><KeyCount>0</KeyCount><NextContinuationToken>t${lists}</NextContinuationToken></ListBucketResult>`,
      );
    });
    const dir = tempDir('mme-disk-cache-');
    const t = await startTestServer(
      `model_repository=s3://${kBucket}/repo\nmodel_repository_endpoint=${endless.url}\nmodel_cache_dir=${dir}`,
    );
    try {
      const res = await invoke(t, 'endless', kInput);
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.errorCode, 'MME_ERR_REPOSITORY_UNAVAILABLE');
      assert.equal(lists, kMaxListPages, 'one request a page, up to the cap');
      assert.match(res.body.message, new RegExp(`went on past ${kMaxListPages} pages .*IsTruncated`));
      assert.deepEqual(fs.readdirSync(dir), []);
    } finally {
      await t.close();
      await endless.close();
    }
  });

  it('ends a fetch the store never answers at the load_timeout, before model_repository_timeout', async () => {
    const held: Array<() => void> = [];
    // Takes each request and answers none (until the test ends): silence no shorter bound ends.
    const silent = await LocalAwsEndpoint.start((_req, res) => held.push(() => res.destroy()));
    const t = await startTestServer(
      `model_repository=s3://${kBucket}/repo\nmodel_repository_endpoint=${silent.url}\nmodel_repository_timeout=600\nmodel_load_timeout=1\nmodel_cache_dir=${tempDir('mme-disk-cache-')}`,
    );
    try {
      const res = await invoke(t, 'silent', kInput);
      assert.equal(res.status, 504, res.text);
      assert.equal(res.body.errorCode, 'MME_ERR_REPOSITORY_TIMEOUT');
      assert.match(res.body.message, /did not finish within its load_timeout \(1 s\)/);
    } finally {
      for (const end of held) end();
      await t.close();
      await silent.close();
    }
  });

  it('ends a download that trickles a byte at a time at the load_timeout: never silent, never done', async () => {
    // The slow store outside the machine: a byte every 50 ms of a declared megabyte, until the client leaves.
    const trickling = await LocalAwsEndpoint.start((req, res) => {
      if (new URL(req.url, 'http://x').searchParams.get('list-type') === '2') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>',
        );
        return;
      }
      res.writeHead(200, { 'content-length': '1000000', etag: '"0123456789abcdef0123456789abcdef"' });
      const drip = setInterval(() => res.write(Buffer.alloc(1)), 50);
      res.on('close', () => clearInterval(drip));
    });
    const dir = tempDir('mme-disk-cache-');
    const t = await startTestServer(
      `model_repository=s3://${kBucket}/repo\nmodel_repository_endpoint=${trickling.url}\nmodel_repository_timeout=600\nmodel_load_timeout=1\nmodel_cache_dir=${dir}`,
    );
    try {
      const res = await invoke(t, 'slow', kInput);
      assert.equal(res.status, 504, res.text);
      assert.match(res.body.message, /did not finish within its load_timeout \(1 s\)/);
      assert.deepEqual(fs.readdirSync(dir), [], 'nothing of the download is kept');
    } finally {
      await t.close();
      await trickling.close();
    }
  });

  it('leaves a load slot to local loads while repository fetches hang (max_concurrent_loads=2)', async () => {
    const held: Array<() => void> = [];
    let answering = false;
    const notFound = (res: import('node:http').ServerResponse) => {
      res.writeHead(404, { 'content-type': 'application/xml' });
      res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>');
    };
    // Holds every request until the test opens the gate, then answers each (held or new) NoSuchKey.
    const gated = await LocalAwsEndpoint.start((_req, res) =>
      answering ? notFound(res) : held.push(() => notFound(res)),
    );
    const t = await startTestServer(
      `model_repository=s3://${kBucket}/repo\nmodel_repository_endpoint=${gated.url}\nmodel_repository_timeout=600\nmodel_load_timeout=600\nmax_concurrent_loads=2\nmodel_cache_dir=${tempDir('mme-disk-cache-')}`,
    );
    try {
      // Two repository loads: the first holds its slot on a listing that does not answer, the second waits for the share.
      const hanging = ['r1', 'r2'].map((name) => invoke(t, name, kInput));
      await waitFor(() => held.length === 1, 'the first listing to reach the store');
      await loadModels(t, { local: addModel() });
      const res = await invoke(t, 'local', { inputs: { x: [Array(16).fill(1)] } });
      assert.equal(res.status, 200, res.text);
      assert.equal(held.length, 1, 'the second repository load still waits for its share of the slots');
      answering = true;
      for (const answer of held.splice(0)) answer();
      for (const r of await Promise.all(hanging)) assert.equal(r.status, 503, r.text);
    } finally {
      answering = true;
      for (const answer of held) answer();
      await t.close();
      await gated.close();
    }
  });
});
