/** What the health, metadata and readiness calls answer, for REST and gRPC. Each model has one version, "1". */
import { MmeError, quote } from '../../errors';
import type { TensorInfo } from '../../model-types';
import type { ModelManager } from '../../server/models/model-manager';
import type { ModelRegistry } from '../../server/models/registry';
import { modelNotFound } from '../../server/models/model-names';
import { v2Datatype } from '../../oip/datatypes';
import { MODEL_VERSION, SERVER_NAME, SERVER_VERSION } from '../../oip/server-identity';
import type { V2Tensor } from '../../oip/types';

/** Triton's name for the binary tensor extension, which /v2/models/{name}/infer speaks. */
export const SERVER_EXTENSIONS: readonly string[] = ['binary_tensor_data'];
/** Triton's platform name for ONNX models. */
const kPlatform = 'onnxruntime_onnx';

export type TensorMetadata = Pick<V2Tensor, 'name' | 'datatype' | 'shape'>;

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

/** SageMaker's /ping body, and TorchServe's Ping health text. */
export function pingStatus(registry: Pick<ModelRegistry, 'failedCount'>): { status: string } {
  return { status: registry.failedCount() > 0 ? 'Partial Healthy' : 'Healthy' };
}

export function serverMetadata(): { name: string; version: string; extensions: string[] } {
  return { name: SERVER_NAME, version: SERVER_VERSION, extensions: [...SERVER_EXTENSIONS] };
}

/** A ZipMap output is described as the [rows, classes] tensor OIP answers with. */
function tensorMetadata(info: TensorInfo): TensorMetadata {
  const t = info.tensor ?? info;
  return {
    name: info.name,
    datatype: v2Datatype(t.type),
    shape: t.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : -1)),
  };
}

/** The name, once its version is the model's (or none). */
export function checkVersion(name: string, version: string | undefined): string {
  if (version && version !== MODEL_VERSION) {
    throw new MmeError(
      'MME_ERR_MODEL_NOT_FOUND',
      `Model ${quote(name)} has no version ${quote(version)}; its only version is ${MODEL_VERSION} (or leave the version out).`,
    );
  }
  return name;
}

/** 404 for one not loaded (an infer loads a model_store one on demand). */
export function modelMetadata(registry: Pick<ModelRegistry, 'get'>, name: string, version?: string): ModelMetadata {
  checkVersion(name, version);
  const model = registry.get(name);
  return {
    name,
    versions: [MODEL_VERSION],
    platform: kPlatform,
    inputs: model.inputs.map(tensorMetadata),
    outputs: model.outputs.map(tensorMetadata),
  };
}

export function modelReady(
  manager: Pick<ModelManager, 'onDemand' | 'registry'>,
  name: string,
  version?: string,
): boolean {
  checkVersion(name, version);
  if (!manager.onDemand.knows(name)) throw modelNotFound(name);
  return manager.registry.current(name)?.phase === 'ready';
}
