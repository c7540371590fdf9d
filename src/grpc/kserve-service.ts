/** KServe's inference.GRPCInferenceService (the Open Inference Protocol over gRPC). */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { oipAnswer } from '../gateway/oip/infer-request';
import { checkVersion, modelMetadata, modelReady, serverMetadata } from '../gateway/oip/model-metadata';
import { unary, type GrpcDeps } from './call';
import { fromOipAnswer, toOipBody, type ModelInferRequest } from './kserve-tensors';

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
    ModelInfer: unary(deps, 'ModelInfer', {
      target: (req: ModelInferRequest) => {
        checkVersion(req.model_name, req.model_version);
        return req.model_name;
      },
      // The body goes to the worker in pieces, without a concat.
      payload: (req, call) => {
        const { header, binaries } = toOipBody(req);
        return { headers: call.headers, body: [header, ...binaries], oipHeaderLength: header.length };
      },
      answer: (req, result) => fromOipAnswer(oipAnswer(req.model_name, result!), req.raw_input_contents.length > 0),
    }),
  };
}
