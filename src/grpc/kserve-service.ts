/** KServe's inference.GRPCInferenceService (the Open Inference Protocol over gRPC). */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { MmeError } from '../errors';
import { checkVersion, modelMetadata, modelReady, serverMetadata } from '../gateway/oip/model-metadata';
import { MODEL_INFER_MEDIA_TYPE } from '../protocol/messages';
import { unary, type GrpcDeps } from './call';
import type { ModelInferHead } from './infer-codec';

interface ModelRef {
  name: string;
  version: string;
}

export function kserveService(deps: GrpcDeps): UntypedServiceImplementation {
  const { manager } = deps;
  return {
    ServerLive: unary(deps, 'ServerLive', { answer: () => ({ live: true }) }),
    // A closing server is refused by the guard (UNAVAILABLE) before it gets here.
    ServerReady: unary(deps, 'ServerReady', { answer: () => ({ ready: true }) }),
    ModelReady: unary(deps, 'ModelReady', {
      answer: (req: ModelRef) => ({ ready: modelReady(manager, req.name, req.version) }),
    }),
    ServerMetadata: unary(deps, 'ServerMetadata', { answer: () => serverMetadata() }),
    ModelMetadata: unary(deps, 'ModelMetadata', {
      answer: (req: ModelRef) => modelMetadata(manager.registry, req.name, req.version),
    }),
    // The worker reads the request's tensors and writes the answer's (worker-process/model-infer-codec.ts).
    ModelInfer: unary(deps, 'ModelInfer', {
      target: (req: ModelInferHead) => checkVersion(req.model_name, req.model_version),
      payload: (req, call) => ({
        headers: call.headers,
        body: req.bytes,
        contentType: MODEL_INFER_MEDIA_TYPE,
        accept: MODEL_INFER_MEDIA_TYPE,
        oipControls: req.controls,
      }),
      answer: (req, result) => {
        if (result!.contentType === MODEL_INFER_MEDIA_TYPE) return result!.body;
        throw new MmeError(
          'MME_ERR_MODEL_ERROR',
          `Model ${req.model_name} answered ModelInfer with Content-Type ${result!.contentType.slice(0, 100)}; its handler must answer requests of Content-Type ${MODEL_INFER_MEDIA_TYPE} with a ModelInferResponse of that type.`,
        );
      },
    }),
  };
}
