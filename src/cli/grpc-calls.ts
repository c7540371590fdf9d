/**
 * Client-side helpers for the server's gRPC services, shared by src/cli/mme-client and the bench:
 * promisified calls, and a v2 JSON request ⇄ ModelInfer with raw contents.
 */
import {
  credentials,
  Metadata,
  type ChannelCredentials,
  type Client,
  type ClientOptions,
  type ServiceError,
} from '@grpc/grpc-js';
import { fromRaw, toArray, toRaw } from '../oip/datatypes';
import { serviceDefinitions } from '../grpc/protos';
import type { V2InferRequest, V2InferResponse } from '../oip/types';

export type ServiceClient = Client & Record<string, (...args: any[]) => any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface GrpcClients {
  kserve: ServiceClient;
  torchserve: ServiceClient;
  close(): void;
}

/** Clients of both services on `address`, in plain text unless `channel` says otherwise (credentials.createSsl). */
export function connect(
  address: string,
  options: ClientOptions = {},
  channel: ChannelCredentials = credentials.createInsecure(),
): GrpcClients {
  const defs = serviceDefinitions();
  const kserve = new defs.kserve(address, channel, options) as ServiceClient;
  const torchserve = new defs.torchserve(address, channel, options) as ServiceClient;
  return {
    kserve,
    torchserve,
    close: () => {
      kserve.close();
      torchserve.close();
    },
  };
}

export function unaryCall<T = unknown>(client: ServiceClient, method: string, request: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](request, new Metadata(), (err: ServiceError | null, res: T) =>
      err ? reject(new Error(`${method}: ${err.details} (gRPC status ${err.code})`)) : resolve(res),
    );
  });
}

/** A v2 JSON request as a ModelInferRequest whose tensors travel in raw_input_contents. */
export function modelInferRequest(model: string, v2: V2InferRequest): unknown {
  return {
    model_name: model,
    id: v2.id ?? '',
    inputs: v2.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape })),
    outputs: (v2.outputs ?? []).map((o) => ({ name: o.name })),
    raw_input_contents: v2.inputs.map((t) => {
      const flat = [t.data].flat(Infinity);
      return t.datatype === 'BYTES' ? toRaw(flat as string[]) : toRaw(toArray(t.datatype, flat, `input ${t.name}`));
    }),
  };
}

interface RawResponse {
  model_name: string;
  id: string;
  outputs: Array<{ name: string; datatype: string; shape: string[] }>;
  raw_output_contents: Buffer[];
}

/** A raw-contents ModelInferResponse as v2 JSON (int64 as decimal strings). */
export function v2Response(res: RawResponse): V2InferResponse {
  return {
    model_name: res.model_name,
    ...(res.id ? { id: res.id } : {}),
    outputs: res.outputs.map((o, i) => {
      const shape = o.shape.map(Number);
      const count = shape.reduce((a, b) => a * b, 1);
      const elements = fromRaw(o.datatype, res.raw_output_contents[i], count, o.name);
      const data = Array.isArray(elements)
        ? elements.map((b) => b.toString('utf8'))
        : Array.from(elements as ArrayLike<number | bigint>, (x) => (typeof x === 'bigint' ? String(x) : x));
      return { name: o.name, datatype: o.datatype, shape, data };
    }),
  };
}
