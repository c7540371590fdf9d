/**
 * ModelInfer's messages as bytes: the door reads a request's model name, version and controls, the
 * worker its tensors, and the worker's answer goes out as it wrote it (worker-process/model-infer-codec.ts).
 * A request with raw contents is vouched for in one pass; anything else (typed contents, parameters,
 * a dimension past 2^49, a count over a limit, malformed protobuf) takes the limits walk and proto-loader.
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { BufferReader, Wire, type WireField } from '../util/protobuf-wire';
import { MAX_DIMS, MAX_ENTRIES } from './message-limits';

/** Beyond 7 varint bytes (2^49) a value is left to protobufjs, which reads 64 bits exactly. */
const kMaxVarintBytes = 7;
const kMaxVarint = 2 ** (7 * kMaxVarintBytes);

/** The next field of [at, end), or null when it is malformed, a group or past 2^49 (protobufjs's). */
function nextField(r: BufferReader, at: number, end: number): WireField | null {
  const f = r.field(at, end);
  if (!f || f.field * 8 >= kMaxVarint || f.varint >= kMaxVarint) return null;
  return f.wire === Wire.Varint || f.wire === Wire.Len || f.wire === Wire.Fixed64 || f.wire === Wire.Fixed32 ? f : null;
}

/** What the door reads of a ModelInferRequest; the worker reads the tensors from its bytes. */
export interface ModelInferHead {
  model_name: string;
  model_version: string;
  /** parameters.timeout and .priority as the client set them (the gateway checks them, as a REST client's). */
  controls: { timeout?: unknown; priority?: unknown };
  bytes: Buffer;
}

/** The head of a message this walk can vouch for (well-formed and within the limits), or null. */
export function inferHead(bytes: Buffer): ModelInferHead | null {
  const r = new BufferReader(bytes);
  const head = { model_name: '', model_version: '', controls: {}, bytes };
  const counts = [0, 0, 0, 0, 0, 0, 0, 0];
  for (let at = 0; at < bytes.length; ) {
    const f = nextField(r, at, bytes.length);
    if (!f || (f.field >= 1 && f.field <= 7 && f.wire !== Wire.Len) || f.field === 4) return null;
    at = f.end;
    if (f.field >= 5 && f.field <= 7 && ++counts[f.field] > MAX_ENTRIES) return null;
    if (f.field === 1) head.model_name = r.text(f);
    else if (f.field === 2) head.model_version = r.text(f);
    else if ((f.field === 5 && !plainInput(r, f)) || (f.field === 6 && !plainOutput(r, f))) return null;
  }
  return head;
}

function plainInput(r: BufferReader, tensor: WireField): boolean {
  let dims = 0;
  for (let at = tensor.payload; at < tensor.end; ) {
    const f = nextField(r, at, tensor.end);
    if (!f || f.field === 4 || f.field === 5 || ((f.field === 1 || f.field === 2) && f.wire !== Wire.Len)) return false;
    at = f.end;
    if (f.field !== 3) continue;
    if (f.wire === Wire.Varint) dims++;
    else if (f.wire !== Wire.Len) return false;
    else
      for (let d = f.payload; d < f.end; d = r.varintEnd, dims++)
        if (dims >= MAX_DIMS || r.varint(d, f.end, kMaxVarintBytes) < 0) return false;
    if (dims > MAX_DIMS) return false;
  }
  return true;
}

function plainOutput(r: BufferReader, output: WireField): boolean {
  for (let at = output.payload; at < output.end; ) {
    const f = nextField(r, at, output.end);
    if (!f || f.field === 2 || (f.field === 1 && f.wire !== Wire.Len)) return false;
    at = f.end;
  }
  return true;
}

type Parameter = { parameter_choice?: string } & Record<string, unknown>;

/** parameters.timeout and .priority of a message proto-loader decoded. */
function controls(parameters: Record<string, Parameter> | undefined): ModelInferHead['controls'] {
  const out: ModelInferHead['controls'] = {};
  for (const key of ['timeout', 'priority'] as const) {
    const p = parameters && Object.hasOwn(parameters, key) ? parameters[key] : undefined;
    if (p?.parameter_choice) out[key] = p[p.parameter_choice];
  }
  return out;
}

/**
 * `service` with ModelInfer's request read as its head and its bytes, what the walk cannot vouch
 * for taken by the codecs it has (limits, then proto-loader), and its answer sent as the worker wrote it.
 */
export function withInferCodec(service: ServiceDefinition): ServiceDefinition {
  const method = (service as Record<string, MethodDefinition<unknown, unknown>>).ModelInfer;
  if (!method) return service;
  const modelInfer: MethodDefinition<unknown, unknown> = {
    ...method,
    requestDeserialize: (bytes: Buffer) => {
      const head = inferHead(bytes);
      if (head) return head;
      const m = method.requestDeserialize(bytes) as object;
      if (!('model_name' in m)) return m; // refused: lenient-decoding.ts
      const { model_name, model_version, parameters } = m as ModelInferHead & {
        parameters?: Record<string, Parameter>;
      };
      return { model_name, model_version, controls: controls(parameters), bytes };
    },
    responseSerialize: (res: unknown) => res as Buffer,
  };
  return { ...service, ModelInfer: modelInfer };
}
