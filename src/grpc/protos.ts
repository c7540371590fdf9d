/** The two gRPC services' definitions from proto/, loaded the same way by the server and every client. */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';

/** Required without its typings: long@5's global `Long` clashes with the long@4 typings onnx-proto uses. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const protoLoader = require('@grpc/proto-loader') as {
  loadSync(files: string[], options: object): Parameters<typeof grpc.loadPackageDefinition>[0];
};

/** Compiled to dist/src/grpc/, so the repository (or image) root is three levels up. */
export const PROTO_DIR = path.resolve(__dirname, '../../../proto');

/**
 * Field names as in the .proto (model_name, raw_input_contents); 64-bit integers as decimal
 * strings, so they stay exact; every field present, repeated ones as [].
 */
const kLoadOptions = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

let loaded: Record<'kserve' | 'torchserve', grpc.ServiceClientConstructor> | null = null;

export function serviceDefinitions(): NonNullable<typeof loaded> {
  if (loaded) return loaded;
  const definition = protoLoader.loadSync(['grpc_predict_v2.proto', 'torchserve_inference.proto'], kLoadOptions);
  const pkg = grpc.loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
    org: { pytorch: { serve: { grpc: { inference: { InferenceAPIsService: grpc.ServiceClientConstructor } } } } };
  };
  loaded = {
    kserve: pkg.inference.GRPCInferenceService,
    torchserve: pkg.org.pytorch.serve.grpc.inference.InferenceAPIsService,
  };
  return loaded;
}
