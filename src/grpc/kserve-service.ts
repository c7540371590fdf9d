/** KServe's inference.GRPCInferenceService (the Open Inference Protocol over gRPC). */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { oipRequest } from '../gateway/oip/infer-request';
import { checkVersion, modelMetadata, modelReady, serverMetadata } from '../gateway/oip/model-metadata';
import { unary, type GrpcDeps } from './call';
import { answerOf, oipBodyOf } from './infer-memo';
import { parameterValue, type ModelInferRequest } from './kserve-tensors';

interface ModelRef {
  name: string;
  version: string;
}

export function kserveService(deps: GrpcDeps): UntypedServiceImplementation {
  const { manager } = deps;
  return {
    ServerLive: unary(deps, 'ServerLive', () => ({ live: true })),
    // A closing server is refused by the guard (UNAVAILABLE) before it gets here.
    ServerReady: unary(deps, 'ServerReady', () => ({ ready: true })),
    ModelReady: unary(deps, 'ModelReady', (req: ModelRef) => ({ ready: modelReady(manager, req.name, req.version) })),
    ServerMetadata: unary(deps, 'ServerMetadata', () => serverMetadata()),
    ModelMetadata: unary(deps, 'ModelMetadata', (req: ModelRef) => modelMetadata(manager, req.name, req.version)),
    ModelInfer: unary(deps, 'ModelInfer', async (req: ModelInferRequest, call, inv) => {
      checkVersion(req.model_name, req.model_version);
      const { body, headerLength } = oipBodyOf(req);
      const request = oipRequest(call.requestId, body, headerLength, call.headers());
      const result = await call.invoke(
        inv,
        req.model_name,
        request,
        {},
        {
          timeout: parameterValue(req, 'timeout'),
          priority: parameterValue(req, 'priority'),
        },
      );
      return answerOf(req, result);
    }),
  };
}
