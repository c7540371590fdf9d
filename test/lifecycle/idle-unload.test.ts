/**
 * idle_unload_seconds and model_idle_unload_seconds on the lifecycle core, in both worker modes,
 * over fake processes on a virtual clock: an idle model is unloaded after its time (logged, counted)
 * and its next invoke loads it again; a request holding it keeps it loaded, its idle time counted
 * from that request's answer; the load request wins over model-config.json; a pinned model is never
 * unloaded for idleness; without the self-managed cache (SageMaker) the settings are refused.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { resolveConfig } from '../../src/config/resolve';
import { isMmeError } from '../../src/errors';
import { resolveSettings } from '../../src/server/models/model-settings';
import type { ModelArtifact } from '../../src/artifacts/model-artifact';
import { waitFor } from '../../harness/process-probes';
import { settle } from '../helpers/settle';
import { answerUntilSettled, invokeRequest, processHarness, statusOf, type ProcessHarness } from './harness';

/** Invokes `name` and answers what the processes hold until its answer comes. */
async function invoke(h: ProcessHarness, name = 'a'): Promise<number> {
  const [r] = await answerUntilSettled(
    [statusOf(h.manager.onDemand.invoke(name, invokeRequest()))],
    () => {
      for (const p of h.processes.live()) p.answerHeld();
    },
    `the answer of ${name}`,
  );
  return r.status;
}

/** Moves the clock `ms` on and lets what it set off run; true when `name` is still registered then. */
async function stillLoadedAfter(h: ProcessHarness, ms: number, name = 'a'): Promise<boolean> {
  h.clock.advance(ms);
  await settle();
  return h.manager.registry.registered(name);
}

function withModelConfig(dir: string, config: object): string {
  fs.writeFileSync(path.join(dir, 'model-config.json'), JSON.stringify(config));
  return dir;
}

for (const mode of ['dedicated', 'shared']) {
  describe(`idle unload (${mode} workers on fake processes, virtual clock)`, () => {
    const start = (properties = '') =>
      processHarness(`worker_mode=${mode}\nshared_workers=1\nmodel_cache=on\n${properties}`, { autoLoad: true });

    it('unloads a model idle for model_idle_unload_seconds, logs why, counts it, and loads it again on its next invoke', async () => {
      const h = start('model_idle_unload_seconds=30');
      h.model('a');
      const counted: string[] = [];
      h.manager.events.sink = { idleUnloaded: (m) => counted.push(m) };
      assert.equal(await invoke(h), 200);
      assert.equal(h.manager.registry.get('a').settings.idleUnloadSeconds, 30);
      assert.equal(await stillLoadedAfter(h, 29_999), true, 'loaded until its idle time has passed');
      h.clock.advance(1);
      await waitFor(() => !h.manager.registry.registered('a'), 'the idle unload');
      assert.ok(h.logs.includes('[a] unloaded: idle for 30 s (idle_unload_seconds=30)'), h.logs.join('\n'));
      assert.deepEqual(counted, ['a']);
      assert.equal(await invoke(h), 200, 'the next invoke loads it on demand');
      assert.equal(h.manager.events.stats.loads, 2);
      await h.manager.close(0);
    });

    it('keeps a model loaded while a request holds it; its idle time starts when that request is answered', async () => {
      const h = start('model_idle_unload_seconds=10');
      h.model('a');
      assert.equal(await invoke(h), 200);
      const running = statusOf(h.manager.onDemand.invoke('a', invokeRequest()));
      await waitFor(() => h.processes.live().some((p) => p.batches.length === 1), 'the request to reach its worker');
      assert.equal(await stillLoadedAfter(h, 25_000), true, 'not idle while its request runs');
      for (const p of h.processes.live()) p.answerHeld();
      assert.equal((await running).status, 200);
      assert.equal(await stillLoadedAfter(h, 9_999), true, 'idle for 10 s only from the answer on');
      h.clock.advance(1);
      await waitFor(() => !h.manager.registry.registered('a'), 'the idle unload');
      await h.manager.close(0);
    });

    it("takes the load request's idle_unload_seconds over model-config.json's, and model-config.json's over the server's", async () => {
      const h = start('model_idle_unload_seconds=100');
      await h.manager.lifecycle.load({
        modelName: 'a',
        url: withModelConfig(h.model('a'), { idleUnloadSeconds: 50 }),
        idleUnloadSeconds: 5,
      });
      await h.manager.lifecycle.load({ modelName: 'b', url: withModelConfig(h.model('b'), { idleUnloadSeconds: 50 }) });
      await h.manager.lifecycle.load({ modelName: 'c', url: withModelConfig(h.model('c'), { idleUnloadSeconds: 0 }) });
      assert.deepEqual(
        ['a', 'b', 'c'].map((n) => h.manager.registry.get(n).settings.idleUnloadSeconds),
        [5, 50, 0],
      );
      h.clock.advance(5_000);
      await waitFor(() => !h.manager.registry.registered('a'), 'a to be unloaded after its own 5 s');
      assert.equal(await stillLoadedAfter(h, 44_999, 'b'), true);
      h.clock.advance(1);
      await waitFor(() => !h.manager.registry.registered('b'), 'b to be unloaded after its model-config.json 50 s');
      assert.equal(await stillLoadedAfter(h, 3_600_000, 'c'), true, '0: never');
      await h.manager.close(0);
    });

    it('never unloads a pinned model for idleness, and refuses idle_unload_seconds beside pinned', async () => {
      const h = start('model_idle_unload_seconds=5');
      await h.manager.lifecycle.load({ modelName: 'p', url: h.model('p'), pinned: true });
      assert.equal(h.manager.registry.get('p').settings.idleUnloadSeconds, 0);
      assert.equal(await stillLoadedAfter(h, 60_000, 'p'), true);
      const both = await statusOf(
        h.manager.lifecycle.load({ modelName: 'q', url: h.model('q'), pinned: true, idleUnloadSeconds: 5 }),
      );
      assert.equal(both.status, 400);
      assert.equal(
        both.error?.message,
        'idle_unload_seconds=5 is refused for a pinned model, which only DELETE /models/{name} unloads; drop one of idle_unload_seconds and pinned.',
      );
      assert.equal(h.manager.registry.registered('q'), false);
      await h.manager.close(0);
    });
  });
}

describe('idle unload without the self-managed cache (SageMaker decides what stays loaded)', () => {
  const config = (text: string, env: Record<string, string> = {}) =>
    resolveConfig({
      fileText: `model_store=\n${text}`,
      configFile: 'test.properties',
      env,
      argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
    });
  const refusal = (run: () => unknown): string => {
    try {
      run();
    } catch (err) {
      if (isMmeError(err)) return `${err.code}: ${err.message}`;
      throw err;
    }
    assert.fail('not refused');
  };
  const sageMaker = { SAGEMAKER_MULTI_MODEL: 'true' };
  const onSageMaker =
    'on SageMaker (SAGEMAKER_MULTI_MODEL=true) the platform decides which models stay loaded and unloads them itself, and an invoke of a model unloaded here would answer 404 until it loaded it again; leave idle unloading to SageMaker and remove the setting';

  it('refuses model_idle_unload_seconds at start, saying why and what to do', () => {
    assert.equal(
      refusal(() => config('model_idle_unload_seconds=30', sageMaker)),
      `MME_ERR_CONFIG: config key model_idle_unload_seconds is 30 (set in test.properties), but ${onSageMaker}`,
    );
    assert.match(
      refusal(() => config('model_cache=off\nmodel_idle_unload_seconds=30')),
      /with model_cache=off nothing would, and that invoke would answer 404\. Set model_cache=on, or remove the setting$/,
    );
    assert.equal(config('model_idle_unload_seconds=0', sageMaker).modelIdleUnloadSeconds, 0);
  });

  it("refuses a model's idle_unload_seconds at load: 400 from the request, the model's own error from model-config.json", () => {
    const c = config('', sageMaker);
    const artifact = (modelConfig: object) => ({ modelConfig }) as ModelArtifact;
    assert.equal(
      refusal(() => resolveSettings({ modelName: 'm', url: 'm', idleUnloadSeconds: 30 }, artifact({}), c)),
      `MME_ERR_BAD_REQUEST: idle_unload_seconds=30 is refused: ${onSageMaker}.`,
    );
    assert.equal(
      refusal(() => resolveSettings({ modelName: 'm', url: 'm' }, artifact({ idleUnloadSeconds: 30 }), c)),
      `MME_ERR_INVALID_MODEL: model-config.json's "idleUnloadSeconds": 30 is refused: ${onSageMaker}.`,
    );
    assert.equal(resolveSettings({ modelName: 'm', url: 'm' }, artifact({}), c).idleUnloadSeconds, 0);
  });
});
