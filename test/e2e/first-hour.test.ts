/**
 * The first hour of a new user, run as they meet it: start-up mistakes as real processes whose
 * stderr is read, the ready line, and the refusals that must say what to change (issue 34).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { mlpModel, writeModelDir } from '../../harness/onnx-models';
import { runCliToExit, startCliServer } from '../../harness/cli-server';
import { waitFor } from '../../harness/process-probes';
import { runNodeScript } from '../../harness/run-node-script';
import { invoke, loadModel, request } from '../../harness/http-requests';
import { tempDir, testProperties } from '../../harness/test-server';

const kMlp = mlpModel({ sizes: [4, 8, 3], seed: 3 });

/** A start-up error as a user should meet it: exit 1, one line on stderr, no stack, never "listening". */
function assertOneLineStartError(run: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0], pattern);
  assert.doesNotMatch(run.stdout, /listening/, run.stdout);
}

describe('first hour: start-up mistakes', () => {
  it('a port in use is one line naming SAGEMAKER_BIND_TO_PORT and the address keys, exit 1, no stack', async () => {
    const holder = net.createServer().listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const { port } = holder.address() as net.AddressInfo;
    try {
      const run = await runCliToExit(testProperties(tempDir('mme-store-')).replace(/:0$/gm, `:${port}`));
      assertOneLineStartError(
        run,
        new RegExp(
          `^cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use, .*\\(EADDRINUSE\\); stop the other process, or move this server: SAGEMAKER_BIND_TO_PORT=<port> moves both APIs, or set inference_address / management_address`,
        ),
      );
    } finally {
      holder.close();
    }
  });

  for (const loadModels of ['load_models=ALL', '']) {
    it(`a model_store that does not exist is one line naming it${loadModels ? ` (${loadModels})` : ' (no load_models)'}`, async () => {
      const missing = path.join(tempDir('mme-store-'), 'no-such-dir');
      const run = await runCliToExit(testProperties(missing, loadModels));
      assertOneLineStartError(
        run,
        new RegExp(`^config key model_store: ${missing} does not exist; create it, or point model_store`),
      );
    });
  }
});

describe('first hour: why a load failed is in the server log', () => {
  for (const format of ['text', 'json'] as const) {
    it(`logs each failed load once, with the model name and the handler's file:line:column (log_format=${format})`, async () => {
      const store = tempDir('mme-store-');
      writeModelDir(store, 'good', kMlp);
      writeModelDir(store, 'broken-at-start', kMlp, { 'handler.js': 'exports.handle = (;\n' });
      const s = await startCliServer(`log_format=${format}\nload_models=good,broken-at-start`, { store });
      try {
        await waitFor(() => s.lines.some((l) => /ready in/.test(l)), 'the ready line');
        const ready = s.lines.find((l) => /ready in/.test(l))!;
        assert.match(
          ready,
          /SageMaker mode|self-managed cache \(model_cache on: .*max_loaded_models=no limit, \d+ MiB model memory budget\)/,
        );
        assert.match(ready, /1 models loaded, 1 failed \(broken-at-start: see their lines above\)/);

        // modelUrl as an API load would show it: relative to model_store, not the server's absolute path.
        assert.deepEqual((await request(`${s.url}/models`)).body.models, [{ modelName: 'good', modelUrl: 'good' }]);

        writeModelDir(store, 'init-fails', kMlp, {
          'handler.js': 'exports.initialize = () => {\n  null.vocabulary;\n};\n',
        });
        const answer = await loadModel(s, 'init-fails', 'init-fails');
        assert.equal(answer.status, 400);
        assert.match(answer.body.message, /\(at handler\.js:2:8\)/);
        assert.doesNotMatch(answer.body.message, new RegExp(store), 'no server path in the answer');

        for (const [name, reason] of [
          [
            'broken-at-start',
            /start-up load from broken-at-start failed: MME_ERR_INVALID_MODEL: the model's handler handler\.js failed to load: Unexpected token ';' \(at handler\.js:1:19\)/,
          ],
          [
            'init-fails',
            /load from init-fails failed: MME_ERR_INVALID_MODEL: .*Cannot read properties of null .*\(at handler\.js:2:8\)/,
          ],
        ] as const) {
          const lines = s.lines.filter((l) => l.includes(name) && / failed: /.test(l));
          assert.equal(lines.length, 1, `one line for ${name}:\n${s.lines.join('\n')}`);
          if (format === 'json') {
            const entry = JSON.parse(lines[0]) as { model: string; level: string; msg: string };
            assert.equal(entry.model, name);
            assert.equal(entry.level, 'error');
            assert.match(entry.msg, reason);
          } else {
            assert.match(lines[0], /ERROR/);
            assert.match(lines[0], reason);
          }
        }
      } finally {
        await s.stop();
      }
    });
  }
});

describe('first hour: the first own model outside the model roots', () => {
  it('answers 400 naming model_roots and no server path, and logs the roots in effect', async () => {
    const store = tempDir('mme-store-');
    const elsewhere = tempDir('mme-elsewhere-');
    writeModelDir(elsewhere, 'mymodel', kMlp);
    const s = await startCliServer('', { store });
    try {
      const answer = await loadModel(s, 'mymodel', path.join(elsewhere, 'mymodel'));
      assert.equal(answer.status, 400);
      assert.match(
        answer.body.message,
        /is outside the model roots \(config key model_roots; by default model_store and \/opt\/ml\/models\); give a url relative to model_store/,
      );
      assert.doesNotMatch(answer.body.message, new RegExp(store), 'the store path stays out of the answer');
      await waitFor(() => s.lines.some((l) => /\[mymodel\] load from .* failed: /.test(l)), 'the failure line');
      assert.match(
        s.lines.find((l) => /\[mymodel\] load from/.test(l))!,
        new RegExp(`model roots in effect: ${store}, /opt/ml/models`),
      );
    } finally {
      await s.stop();
    }
  });
});

describe("first hour: self-managed mode (npm start's default)", () => {
  it('logs why a model was chosen for eviction; a DELETEd model of model_store loads again on its next invoke, as docs/cache.md says', async () => {
    const store = tempDir('mme-store-');
    for (const name of ['a', 'b']) writeModelDir(store, name, kMlp);
    const s = await startCliServer('max_loaded_models=1', { store });
    try {
      const row = [[1, 2, 3, 4]];
      assert.equal((await invoke(s, 'a', row)).status, 200);
      assert.equal((await invoke(s, 'b', row)).status, 200);
      await waitFor(() => s.lines.some((l) => /\[a\] evicted /.test(l)), 'the eviction line');
      assert.match(
        s.lines.find((l) => /\[a\] evicted /.test(l))!,
        /\[a\] evicted to make room for b \(max_loaded_models=1 are loaded\): eviction_policy=gdsf ranks it 1 of 1, idle; eviction order a \(idle \d+ s, freed /,
      );

      assert.equal((await request(`${s.url}/models/b`, { method: 'DELETE' })).status, 200);
      assert.equal(
        (await invoke(s, 'b', row)).status,
        200,
        'the folder is still in model_store: the next invoke loads it again',
      );
    } finally {
      await s.stop();
    }
  });
});

describe('first hour: mme-client scale', () => {
  it("scales a model's workers and answers once they run; a bad count is a usage error", async () => {
    const store = tempDir('mme-store-');
    writeModelDir(store, 'm', kMlp);
    const s = await startCliServer('', { store });
    try {
      const url = s.url.replace(/\/$/, '');
      assert.equal((await runNodeScript('mme-client', ['--url', url, 'load', 'm', 'm'])).code, 0);
      const scaled = await runNodeScript('mme-client', ['--url', url, 'scale', 'm', '2']);
      assert.equal(scaled.code, 0, scaled.stderr);
      assert.match(scaled.stdout, /Workers scaled/);
      assert.equal((await request(`${url}/models/m`)).body.workers.length, 2);
      const bad = await runNodeScript('mme-client', ['--url', url, 'scale', 'm', 'two']);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /^scale takes whole numbers of workers, e\.g\. scale m 2/);
    } finally {
      await s.stop();
    }
  });
});
