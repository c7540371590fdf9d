/** A registration's Model: its settings, what each worker loads, and where its workers start. */
import type { ModelArtifact } from '../../artifacts/model-artifact';
import type { ServerConfig } from '../../config/types';
import type { WorkerFactory } from '../workers/worker-factory';
import type { LifecycleEvents } from './lifecycle-events';
import { Model, type ModelHealth } from './model';
import type { ModelSettings } from './model-settings';

export interface ModelParts {
  name: string;
  url: string;
  settings: ModelSettings;
  artifact: ModelArtifact;
  handlerPath: string | null;
  health: ModelHealth;
}

export function buildModel(
  p: ModelParts,
  config: ServerConfig,
  workers: WorkerFactory,
  events: LifecycleEvents,
  log: (line: string) => void,
): Model {
  const { name, settings, artifact } = p;
  return new Model(name, p.url, settings, {
    load: {
      modelName: name,
      modelDir: artifact.dir,
      onnxPath: artifact.onnxPath,
      handlerPath: p.handlerPath,
      intraOpThreads: config.intraOpThreads,
      interOpThreads: config.interOpThreads,
      graphOptimizationLevel: config.graphOptimizationLevel,
      decodeInputRequest: config.decodeInputRequest,
      maxStreamBuffer: config.maxStreamBuffer,
      maxRequestElements: config.maxRequestElements,
    },
    maxResponseSize: config.maxResponseSize,
    onnxBytes: artifact.onnxBytes,
    assignGpu: workers.gpuFor(settings.workerMode, name, settings.deviceIds),
    startWorker: workers.starter(settings.workerMode, workers.limits.forModel(name, settings)),
    // A shared model promoted by autoscale runs in processes of its own, on CPU as its host did.
    startOwnWorker: settings.workerMode === 'shared' ? workers.starter('dedicated') : undefined,
    waitForRoom: workers.waitForRoom(settings.workerMode),
    log,
    health: p.health,
    onRestarted: () => events.workerRestarted(name),
    onRan: (micros) => events.sharedHostRunTime(name, micros),
    clock: workers.clock,
    autoscale: config.autoscale,
    heavyShare: config.sharedHostHeavyShare,
  });
}
