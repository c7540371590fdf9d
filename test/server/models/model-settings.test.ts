import assert from 'node:assert/strict';
import type { ModelArtifact } from '../../../src/artifacts/model-artifact';
import type { ModelDirConfig } from '../../../src/artifacts/model-config';
import { resolveConfig } from '../../../src/config/resolve';
import { resolveSettings } from '../../../src/server/models/model-settings';
import { workersWithinCpuLimit } from '../../../src/server/processes/limit-enforcement';

const config = (text: string) =>
  resolveConfig({
    fileText: text,
    configFile: 'test.properties',
    env: {},
    argv: { command: null, mmsConfig: null, modelStore: null, models: null, help: false },
  });

const artifact = (modelConfig: ModelDirConfig) => ({ modelConfig }) as ModelArtifact;

describe('model settings: memory_limit_mb and cpu_limit', () => {
  it('the load request wins over model-config.json; none means no limit', () => {
    const c = config('');
    const s = resolveSettings(
      { modelName: 'm', url: 'm', cpuLimit: 0.5 },
      artifact({ cpuLimit: 1, memoryLimitMb: 200 }),
      c,
    );
    assert.deepEqual([s.cpuLimit, s.memoryLimitMb], [0.5, 200]);
    const none = resolveSettings({ modelName: 'm', url: 'm' }, artifact({}), c);
    assert.deepEqual([none.cpuLimit, none.memoryLimitMb], [null, null]);
  });

  it('a limited model runs in processes of its own under worker_mode=shared: a limit holds whole processes', () => {
    const c = config('worker_mode=shared');
    assert.equal(resolveSettings({ modelName: 'm', url: 'm' }, artifact({}), c).workerMode, 'shared');
    for (const limit of [{ memoryLimitMb: 150 }, { cpuLimit: 0.5 }]) {
      const s = resolveSettings({ modelName: 'm', url: 'm', workerMode: 'shared', ...limit }, artifact({}), c);
      assert.equal(s.workerMode, 'dedicated', JSON.stringify(limit));
    }
  });

  it('autoscale plans at most ceil(cpu_limit) workers: more single-threaded runs only share the quota', () => {
    assert.deepEqual(
      [
        workersWithinCpuLimit(8, null),
        workersWithinCpuLimit(8, 0.5),
        workersWithinCpuLimit(8, 2.5),
        workersWithinCpuLimit(2, 4),
      ],
      [8, 1, 3, 2],
    );
  });
});
