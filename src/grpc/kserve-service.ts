/** KServe's inference.GRPCInferenceService (the Open Inference Protocol over gRPC). */
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import { oipAnswer, oipRequest } from '../gateway/oip/infer-request';
import { checkVersion, modelMetadata, modelReady, serverMetadata } from '../gateway/oip/model-metadata';
import { unary, type GrpcDeps } from './call';
import { fromOipAnswer, parameterValue, toOipBody, type ModelInferRequest } from './kserve-tensors';

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
      // The body goes to the worker in pieces, without a concat.
      const { header, binaries } = toOipBody(req);
      const request = oipRequest(call.requestId, [header, ...binaries], header.length, call.headers());
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
      return fromOipAnswer(oipAnswer(req.model_name, result), req.raw_input_contents.length > 0);
    }),
  };
}
