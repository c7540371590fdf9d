import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import * as tar from 'tar';
import { LocalAwsEndpoint, localAwsEnv, replyAwsJson, type AwsRequest } from '../helpers/aws-endpoint';
import { runNodeScript } from '../../harness/run-node-script';
import { tempDir } from '../../harness/test-server';
import { mlpModel } from '../../harness/onnx-models';

/** The entries of a .tar.gz: path → content. */
function untar(gz: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const parser = new tar.Parser({
    onReadEntry: (e) => {
      const chunks: Buffer[] = [];
      e.on('data', (c: Buffer) => chunks.push(c));
      e.on('end', () => files.set(e.path, Buffer.concat(chunks)));
    },
  });
  parser.end(zlib.gunzipSync(gz));
  return files;
}

describe('npm run models:upload (real S3 client against a local PutObject endpoint)', () => {
  let s3: LocalAwsEndpoint;
  beforeEach(async () => {
    s3 = await LocalAwsEndpoint.start((_req, res) => {
      res.writeHead(200, { etag: '"0123456789abcdef"' });
      res.end();
    });
  });
  afterEach(() => s3.close());
  const upload = (...args: string[]) => runNodeScript('sagemaker/upload-models', args, localAwsEnv({ S3: s3.url }));

  function store(): string {
    const dir = tempDir('mme-upload-');
    for (const [name, seed] of [
      ['alpha', 1],
      ['beta', 2],
    ] as const) {
      fs.mkdirSync(path.join(dir, name, 'assets'), { recursive: true });
      fs.writeFileSync(path.join(dir, name, 'model.onnx'), mlpModel({ sizes: [4, 8, 3], seed }));
      fs.writeFileSync(path.join(dir, name, 'assets', 'labels.json'), '["a","b","c"]');
    }
    fs.writeFileSync(path.join(dir, 'README.md'), 'not a model');
    return dir;
  }

  it('packs each model directory with its files at the root and PUTs it under the prefix', async () => {
    const dir = store();
    const run = await upload('--bucket', 'my-bucket', '--prefix', 'mme-models/', '--store', dir);
    assert.equal(run.code, 0, run.stderr);
    const puts: AwsRequest[] = s3.requests;
    assert.deepEqual(
      puts.map((r) => `${r.method} ${r.url.split('?')[0]}`),
      ['PUT /my-bucket/mme-models/alpha.tar.gz', 'PUT /my-bucket/mme-models/beta.tar.gz'],
    );
    for (const [i, put] of puts.entries()) {
      const name = ['alpha', 'beta'][i];
      assert.equal(put.accessKeyId, 'AKIDMMETEST');
      assert.equal(put.headers['content-type'], 'application/gzip');
      assert.equal(Number(put.headers['content-length']), put.body.length);
      const files = untar(put.body);
      assert.deepEqual([...files.keys()].sort(), ['assets/labels.json', 'model.onnx']);
      assert.deepEqual(files.get('model.onnx'), fs.readFileSync(path.join(dir, name, 'model.onnx')));
      assert.match(
        run.stdout,
        new RegExp(
          `uploaded s3://my-bucket/mme-models/${name}.tar.gz \\(${put.body.length} bytes\\): TargetModel ${name}.tar.gz`,
        ),
      );
    }
  });

  it('refuses a directory the server would refuse, before uploading anything', async () => {
    const dir = store();
    const empty = path.join(dir, 'empty');
    fs.mkdirSync(empty);
    const run = await upload('--bucket', 'my-bucket', '--prefix', 'p', path.join(dir, 'alpha'), empty);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /must hold a \.onnx file/);
    assert.equal(s3.requests.length, 1, 'alpha went up; the bad directory stopped the run');

    fs.symlinkSync('/etc/passwd', path.join(dir, 'beta', 'link'));
    const linked = await upload('--bucket', 'my-bucket', '--prefix', 'p', path.join(dir, 'beta'));
    assert.equal(linked.code, 1);
    assert.match(linked.stderr, /beta\/link is a link or special file; .*Replace it with a copy/);
  });

  it('gives a usage error without directories or with both --store and directories', async () => {
    for (const args of [
      ['--bucket', 'b-1', '--prefix', 'p'],
      ['--bucket', 'b-1', '--prefix', 'p', '--store', '.', 'x'],
    ]) {
      const run = await upload(...args);
      assert.equal(run.code, 2);
      assert.match(
        run.stderr,
        /error: (name at least one model directory|give either --store or model directories)[^]*Usage:/,
      );
    }
  });
});

describe('npm run invoke:sagemaker (real runtime client against a local InvokeEndpoint)', () => {
  let runtime: LocalAwsEndpoint;
  afterEach(() => runtime.close());

  it('sends the body with TargetModel as X-Amzn-SageMaker-Target-Model and prints the answer', async () => {
    runtime = await LocalAwsEndpoint.start((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-invoked-production-variant': 'AllTraffic' });
      res.end('{"outputs":{"output":[[0.1,0.2,0.3]]}}');
    });
    const run = await runNodeScript(
      'sagemaker/invoke',
      [
        '--endpoint',
        'ep',
        '--target-model',
        'nested/mlp.tar.gz',
        '--body',
        '{"inputs":{"input":[[1,2,3,4]]}}',
        '--accept',
        'application/json',
      ],
      localAwsEnv({ SAGEMAKER_RUNTIME: runtime.url }),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, '{"outputs":{"output":[[0.1,0.2,0.3]]}}');
    assert.match(run.stderr, /AllTraffic: application\/json/);
    const [req] = runtime.requests;
    assert.equal(`${req.method} ${req.url}`, 'POST /endpoints/ep/invocations');
    assert.equal(req.headers['x-amzn-sagemaker-target-model'], 'nested/mlp.tar.gz');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers.accept, 'application/json');
    assert.equal(req.body.toString(), '{"inputs":{"input":[[1,2,3,4]]}}');
    assert.equal(req.accessKeyId, 'AKIDMMETEST');
  });

  it('reads @FILE bodies and reports a model error with its message', async () => {
    runtime = await LocalAwsEndpoint.start((_req, res) =>
      replyAwsJson(
        res,
        '1.1',
        424,
        {
          ErrorCode: 'MODEL_ERROR',
          Message: 'Received client error (400) from model with message "input has shape [1, 3]"',
          OriginalStatusCode: 400,
        },
        { 'x-amzn-errortype': 'ModelError:http://internal.amazon.com/coral/com.amazon.sagemaker/' },
      ),
    );
    const file = path.join(tempDir(), 'body.json');
    fs.writeFileSync(file, '[[1,2,3]]');
    const run = await runNodeScript(
      'sagemaker/invoke',
      ['--endpoint', 'ep', '--target-model', 'mlp.tar.gz', '--body', `@${file}`],
      localAwsEnv({ SAGEMAKER_RUNTIME: runtime.url }),
    );
    assert.equal(run.code, 1);
    assert.equal(runtime.requests[0].body.toString(), '[[1,2,3]]');
    assert.match(
      run.stderr,
      /error: ModelError: Received client error \(400\) from model with message "input has shape \[1, 3\]"/,
    );
  });

  it('gives a usage error for a missing target model', async () => {
    runtime = await LocalAwsEndpoint.start((_req, res) => res.end());
    const run = await runNodeScript(
      'sagemaker/invoke',
      ['--endpoint', 'ep', '--body', '{}'],
      localAwsEnv({ SAGEMAKER_RUNTIME: runtime.url }),
    );
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--target-model is required/);
    assert.equal(runtime.requests.length, 0);
  });
});
