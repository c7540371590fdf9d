/**
 * The Docker image (docker/Dockerfile), built and run with podman as SageMaker runs it: `IMAGE serve`,
 * a model folder at /opt/ml/models, the MME API on 8080 (or SAGEMAKER_BIND_TO_PORT), SIGTERM on stop;
 * and bare, with nothing mounted, as a first `docker run IMAGE serve` starts it.
 *
 * It runs wherever podman works and the Dockerfile's base image (node:24-bookworm-slim, the default
 * NODE_IMAGE) is present, and is skipped otherwise (skip id podman) with a message saying how to enable it. Nothing
 * here installs or fetches anything: CI's .ci/run prepares podman and the base image first.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, unaryCall } from '../../src/cli/grpc-calls';
import type { V2InferRequest } from '../../src/oip/types';
import { behaviourHandler } from '../../harness/fault-handlers';
import { f32 } from '../../harness/float32';
import { mlpForward, mlpModel, writeModelDir } from '../../harness/onnx-models';
import { waitFor } from '../../harness/process-probes';
import { freePorts } from '../../harness/cli-server';
import { request, type JsonResponse } from '../../harness/http-requests';
import { runCommand } from '../../harness/run-command';
import { skipBecause } from '../helpers/skip';
import { assertRowsClose } from '../helpers/assert-close';
import { codeBlocks, makeIrisExample } from '../helpers/docs-examples';

const kRepoRoot = path.resolve(__dirname, '..', '..', '..');
const kBaseImage = 'docker.io/library/node:24-bookworm-slim';
const kRunId = `${process.pid}-${Date.now().toString(36)}`;
const kImage = `localhost/sagemaker-mme-node-test:${kRunId}`;
const kMlp = { sizes: [4, 8, 3], seed: 7 };

/** A command to completion in the repository root, killed at `timeoutMs`; never rejects: callers look at the exit code. */
const run = (cmd: string, args: readonly string[], timeoutMs: number) =>
  runCommand(cmd, args, { cwd: kRepoRoot, timeoutMs });

async function podman(args: readonly string[], timeoutMs = 30_000): Promise<string> {
  const r = await run('podman', args, timeoutMs);
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}:\n${tail(r.stderr || r.stdout, 40)}`);
  return r.stdout.trim();
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Null when `podman --version` works, else why not. */
async function podmanProblem(): Promise<string | null> {
  const r = await run('podman', ['--version'], 10_000);
  if (r.code === 0) return null;
  return /ENOENT/.test(r.stderr)
    ? 'podman is not installed'
    : `podman does not work here (${tail(r.stderr, 3).trim()})`;
}

/** Null when podman and the base image are ready, else why the suite cannot run here and how to enable it. */
async function podmanUnready(): Promise<string | null> {
  const problem = await podmanProblem();
  if (problem !== null) return `${problem}; install podman (apt-get install podman) to run the image tests`;
  if ((await run('podman', ['image', 'exists', kBaseImage], 30_000)).code !== 0) {
    return `the base image ${kBaseImage} is not present; \`podman pull ${kBaseImage}\` (or build with --build-arg NODE_IMAGE=<an image you have>) to run the image tests`;
  }
  return null;
}

/** The harness's request, bounded by `timeoutMs` (default 10 s), so that a container that stops answering fails the test. */
function http(url: string, init: RequestInit & { json?: unknown; timeoutMs?: number } = {}): Promise<JsonResponse> {
  const { timeoutMs = 10_000, ...rest } = init;
  return request(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) });
}

/** Polls GET /ping until 200; returns ms from `since`. */
async function waitReady(base: string, container: string, since: number, boundMs = 30_000): Promise<number> {
  await waitFor(
    async () => {
      try {
        return (await http(`${base}/ping`, { timeoutMs: 2_000 })).status === 200;
      } catch {
        return false;
      }
    },
    `${container} to answer /ping`,
    boundMs,
    50,
  ).catch(async (err: Error) => {
    const logs = await run('podman', ['logs', container], 10_000);
    throw new Error(`${err.message}\ncontainer log:\n${tail(logs.stdout + logs.stderr, 30)}`);
  });
  return Date.now() - since;
}

describe('docker image (podman)', function () {
  const containers: string[] = [];
  let modelRoot = '';
  let signalDir = '';
  let built = false;
  let skipped = false;

  async function startContainer(name: string, args: readonly string[]): Promise<string> {
    const full = `mme-test-${kRunId}-${name}`;
    containers.push(full);
    await podman(['run', '-d', '--name', full, ...args, kImage, 'serve']);
    return full;
  }

  before(async function () {
    this.timeout(300_000);
    const reason = await podmanUnready();
    if (reason !== null) {
      skipped = true;
      skipBecause(this, 'podman', `the Docker image tests cannot run: ${reason}`);
    }
    modelRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-image-models-'));
    signalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mme-image-signal-'));
    fs.chmodSync(modelRoot, 0o755);
    writeModelDir(modelRoot, 'mlp', mlpModel(kMlp));
    writeModelDir(modelRoot, 'slow', mlpModel(kMlp), { 'handler.js': behaviourHandler });
    // docs/handlers.md's example, made as the page says: it must work with the image's decode_input_request=false.
    const iris = path.join(await makeIrisExample(fs.mkdtempSync(path.join(os.tmpdir(), 'mme-image-iris-'))), 'iris');
    fs.cpSync(iris, path.join(modelRoot, 'iris'), { recursive: true });

    const t0 = Date.now();
    const r = await run(
      'podman',
      [
        'build',
        '--pull=never',
        '--format',
        'docker',
        '--build-arg',
        `NODE_IMAGE=${kBaseImage}`,
        '-f',
        'docker/Dockerfile',
        '-t',
        kImage,
        '.',
      ],
      280_000,
    );
    if (r.code !== 0) throw new Error(`podman build failed (exit ${r.code}):\n${tail(r.stdout + r.stderr, 60)}`);
    built = true;
    const size = Number(await podman(['image', 'inspect', '--format', '{{.Size}}', kImage]));
    console.log(`      built ${kImage} in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${(size / 1e6).toFixed(0)} MB`);
  });

  after(async function () {
    this.timeout(60_000);
    if (skipped) return;
    for (const c of containers) await run('podman', ['rm', '-f', '-t', '0', c], 30_000);
    // The tag goes; its layers stay as build cache for the next run (podman image prune removes them).
    if (built) await run('podman', ['rmi', '--no-prune', kImage], 30_000);
    for (const dir of [modelRoot, signalDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('declares the SageMaker labels, `serve` as CMD, an exec-form node entrypoint and port 8080', async function () {
    this.timeout(30_000);
    const [image] = JSON.parse(await podman(['image', 'inspect', kImage])) as Array<{ Config: Record<string, any> }>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const config = image.Config;
    assert.equal(config.Labels['com.amazonaws.sagemaker.capabilities.multi-models'], 'true');
    assert.equal(config.Labels['com.amazonaws.sagemaker.capabilities.accept-bind-to-port'], 'true');
    assert.deepEqual(config.Cmd, ['serve']);
    assert.deepEqual(config.Entrypoint, ['node', '/opt/mme/dist/src/main.js']);
    assert.ok('8080/tcp' in config.ExposedPorts, `ExposedPorts: ${JSON.stringify(config.ExposedPorts)}`);
  });

  describe('run as SageMaker runs it (SAGEMAKER_MULTI_MODEL=true)', function () {
    let name = '';
    let base = '';
    let grpcPort = 0;

    before(async function () {
      this.timeout(60_000);
      const [port, grpc] = await freePorts(2);
      grpcPort = grpc;
      base = `http://127.0.0.1:${port}`;
      const t0 = Date.now();
      name = await startContainer('sm', [
        '-p',
        `127.0.0.1:${port}:8080`,
        '-p',
        `127.0.0.1:${grpcPort}:7070`,
        '-v',
        `${modelRoot}:/opt/ml/models:ro`,
        '-v',
        `${signalDir}:/signal`,
        '-e',
        'SAGEMAKER_MULTI_MODEL=true',
        // gRPC as the Kubernetes manifests set it: published, so bound to every interface in the container.
        '-e',
        'MMS_GRPC_INFERENCE_PORT=7070',
        '-e',
        'MMS_GRPC_INFERENCE_ADDRESS=0.0.0.0',
      ]);
      const ms = await waitReady(base, name, t0);
      console.log(`      /ping answered 200 ${ms} ms after podman run`);
    });

    it('pings, loads, invokes, lists, describes and unloads a model through the MME API', async function () {
      this.timeout(60_000);
      const ping = await http(`${base}/ping`);
      assert.equal(ping.status, 200);

      // As SageMaker: model_name is opaque, url is the extracted directory.
      const load = await http(`${base}/models`, {
        method: 'POST',
        json: { model_name: 'mlp', url: '/opt/ml/models/mlp' },
        headers: { accept: 'application/json' },
      });
      assert.equal(load.status, 200, load.text);
      assert.equal(
        (await http(`${base}/models`, { method: 'POST', json: { model_name: 'mlp', url: '/opt/ml/models/mlp' } }))
          .status,
        409,
      );
      assert.equal(
        (await http(`${base}/models`, { method: 'POST', json: { model_name: 'nope', url: '/opt/ml/models/nope' } }))
          .status,
        404,
      );

      const rows = [
        [1, 2, 3, 4],
        [0, -1, 0.5, 2],
      ];
      const invoke = await http(`${base}/models/mlp/invoke`, {
        method: 'POST',
        json: { inputs: { input: rows } },
        headers: { 'x-amzn-sagemaker-target-model': 'a/b/mlp.tar.gz', 'x-amzn-sagemaker-custom-attributes': 'trace=1' },
      });
      assert.equal(invoke.status, 200, invoke.text);
      assertRowsClose(invoke.body.outputs.output, mlpForward(kMlp, rows));

      const list = await http(`${base}/models`);
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.models, [{ modelName: 'mlp', modelUrl: '/opt/ml/models/mlp' }]);
      const describe = await http(`${base}/models/mlp`);
      assert.equal(describe.status, 200);
      assert.equal(describe.body.modelName, 'mlp');

      const unload = await http(`${base}/models/mlp`, { method: 'DELETE' });
      assert.equal(unload.status, 200, unload.text);
      assert.equal((await http(`${base}/models/mlp`)).status, 404);
      assert.deepEqual((await http(`${base}/models`)).body.models, []);
      // model_cache is off under SageMaker: an unloaded model is not loaded again behind its back.
      assert.equal(
        (await http(`${base}/models/mlp/invoke`, { method: 'POST', json: { inputs: { input: rows } } })).status,
        404,
      );
    });

    it('answers Open Inference Protocol v2 over REST and over gRPC (KServe ModelInfer)', async function () {
      this.timeout(60_000);
      const load = await http(`${base}/models`, {
        method: 'POST',
        json: { model_name: 'mlp', url: '/opt/ml/models/mlp' },
      });
      assert.equal(load.status, 200, load.text);
      const rows = [
        [1, 2, 3, 4],
        [0, -1, 0.5, 2],
      ];
      const request: V2InferRequest = {
        inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 4], data: rows.flat() }],
      };
      const expected = mlpForward(kMlp, rows);
      const asRows = (data: unknown[]) => [data.slice(0, 3), data.slice(3)] as number[][];

      const rest = await http(`${base}/v2/models/mlp/infer`, { method: 'POST', json: request });
      assert.equal(rest.status, 200, rest.text);
      assertRowsClose(asRows(rest.body.outputs[0].data), expected);

      const clients = connect(`127.0.0.1:${grpcPort}`);
      try {
        // The tensors as KServe's protocol defines raw contents, little-endian float32, written and read
        // here rather than by the server's own codec.
        const raw = f32(rows.flat());
        const reply = await unaryCall<any>(clients.kserve, 'ModelInfer', {
          model_name: 'mlp',
          inputs: [{ name: 'input', datatype: 'FP32', shape: [2, 4] }],
          raw_input_contents: [raw],
        });
        assert.deepEqual([reply.outputs[0].datatype, reply.outputs[0].shape.map(Number)], ['FP32', [2, 3]]);
        const out: Buffer = reply.raw_output_contents[0];
        assertRowsClose(
          asRows([...new Float32Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.length))]),
          expected,
        );
      } finally {
        clients.close();
      }
      assert.equal((await http(`${base}/models/mlp`, { method: 'DELETE' })).status, 200);
    });

    it('on `podman stop -t 30` (SIGTERM) answers the requests in flight, then exits 0 by itself (podman would SIGKILL it at 30 s: exit 137)', async function () {
      this.timeout(90_000);
      const load = await http(`${base}/models`, {
        method: 'POST',
        json: { model_name: 'slow', url: '/opt/ml/models/slow', initial_workers: 2 },
      });
      assert.equal(load.status, 200, load.text);

      // Two workers, each blocked 3 s in a request; each request touches a file when it starts to run.
      const inFlight = ['a', 'b'].map((id) =>
        http(`${base}/models/slow/invoke`, {
          method: 'POST',
          json: { touch: `/signal/${id}`, sleepMs: 3000, echo: id },
          timeoutMs: 60_000,
        }),
      );
      await waitFor(
        () => ['a', 'b'].every((id) => fs.existsSync(path.join(signalDir, id))),
        'both slow requests to start in the workers',
        20_000,
      );

      const t0 = Date.now();
      const stop = await run('podman', ['stop', '-t', '30', name], 60_000);
      const stopMs = Date.now() - t0;
      assert.equal(stop.code, 0, stop.stderr);

      const replies = await Promise.all(inFlight);
      replies.forEach((r, i) => {
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.echo, ['a', 'b'][i]);
      });
      assert.notEqual(replies[0].body.pid, replies[1].body.pid, 'the two requests ran in two worker processes');

      const exitCode = Number(await podman(['inspect', '--format', '{{.State.ExitCode}}', name]));
      const logs = await run('podman', ['logs', name], 10_000);
      assert.equal(exitCode, 0, `container exit code ${exitCode}; log:\n${tail(logs.stdout + logs.stderr, 20)}`);
      assert.match(logs.stdout, /SIGTERM: draining/);
      console.log(`      podman stop returned in ${stopMs} ms with two 3 s requests in flight`);
    });
  });

  describe('started bare: `IMAGE serve` with nothing mounted (issue 47)', function () {
    it('answers /ping with no model store, and its start line says where models come from', async function () {
      this.timeout(60_000);
      const [port] = await freePorts(1);
      const base = `http://127.0.0.1:${port}`;
      const name = await startContainer('bare', ['-p', `127.0.0.1:${port}:9090`, '-e', 'SAGEMAKER_BIND_TO_PORT=9090']);
      await waitReady(base, name, Date.now());
      assert.equal((await http(`${base}/ping`)).status, 200);
      assert.deepEqual((await http(`${base}/models`)).body.models, []);
      const logs = await run('podman', ['logs', name], 10_000);
      assert.match(
        logs.stdout,
        /no model store: model_store's default \/opt\/ml\/models does not exist; models load by url through POST \/models/,
        logs.stdout + logs.stderr,
      );
    });
  });

  describe('run locally (no SageMaker environment)', function () {
    let name = '';
    let base = '';

    before(async function () {
      this.timeout(60_000);
      const [port, port8080] = await freePorts(2);
      base = `http://127.0.0.1:${port}`;
      const t0 = Date.now();
      name = await startContainer('local', [
        '-p',
        `127.0.0.1:${port}:9090`,
        '-p',
        `127.0.0.1:${port8080}:8080`,
        '-v',
        `${modelRoot}:/opt/ml/models:ro`,
        '-v',
        `${signalDir}:/signal`,
        '-e',
        'SAGEMAKER_BIND_TO_PORT=9090',
        '-e',
        'SAGEMAKER_MAX_PAYLOAD_IN_MB=1',
        // The image's config has enable_envvars_config=true: MMS_<KEY> tunes any key.
        '-e',
        'MMS_SHUTDOWN_TIMEOUT=2',
      ]);
      await waitReady(base, name, t0);
      await assert.rejects(
        http(`http://127.0.0.1:${port8080}/ping`, { timeoutMs: 3_000 }),
        'nothing may listen on 8080',
      );
    });

    it('listens on SAGEMAKER_BIND_TO_PORT instead of 8080', async function () {
      this.timeout(10_000);
      assert.equal((await http(`${base}/ping`)).status, 200);
    });

    it('invokes a model of the mounted folder by name, loading it on first use', async function () {
      this.timeout(60_000);
      const rows = [[1, 2, 3, 4]];
      const invoke = await http(`${base}/models/mlp/invoke`, { method: 'POST', json: rows, timeoutMs: 50_000 });
      assert.equal(invoke.status, 200, invoke.text);
      assertRowsClose(invoke.body, mlpForward(kMlp, rows));
    });

    it("answers docs/handlers.md's iris example as the page shows (the image's decode_input_request=false)", async function () {
      this.timeout(60_000);
      const body = /-d '(\{.*\})'/.exec(codeBlocks('docs/handlers.md', 'sh')[1])![1];
      const answer = await http(`${base}/models/iris/invoke`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
        timeoutMs: 50_000,
      });
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.label, 'setosa');
    });

    it('takes its request size limit from SAGEMAKER_MAX_PAYLOAD_IN_MB', async function () {
      this.timeout(30_000);
      const big = await http(`${base}/models/mlp/invoke`, {
        method: 'POST',
        body: Buffer.alloc(1.5 * 2 ** 20, 0x31),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(big.status, 413, big.text);
    });

    it('on stop, answers a request that never finishes once shutdown_timeout is over, and exits 0', async function () {
      this.timeout(60_000);
      const load = await http(`${base}/models`, {
        method: 'POST',
        json: { model_name: 'slow', url: '/opt/ml/models/slow' },
      });
      assert.equal(load.status, 200, load.text);
      const hung = http(`${base}/models/slow/invoke`, {
        method: 'POST',
        json: { touch: '/signal/hang', hang: true },
        timeoutMs: 30_000,
      });
      await waitFor(
        () => fs.existsSync(path.join(signalDir, 'hang')),
        'the hanging request to start in the worker',
        20_000,
      );

      const t0 = Date.now();
      const stop = await run('podman', ['stop', '-t', '30', name], 60_000);
      const stopMs = Date.now() - t0;
      assert.equal(stop.code, 0, stop.stderr);
      const reply = await hung;
      // The worker is killed after the 2 s drain; the client gets an error answer, not a hang.
      assert.equal(reply.status, 503, reply.text);
      assert.equal(JSON.parse(reply.text).errorCode, 'MME_ERR_SHUTTING_DOWN');
      assert.equal(Number(await podman(['inspect', '--format', '{{.State.ExitCode}}', name])), 0);
      console.log(
        `      podman stop returned in ${stopMs} ms (shutdown_timeout=2) with a hung request, answered ${reply.status}`,
      );
    });
  });
});
