/**
 * ModelInfer's two messages without protobufjs for raw contents: one pass instead of proto-loader's
 * three (limits walk, decode, toObject). Anything else (typed contents, parameters, a dimension past
 * 2^49, a count over a limit, malformed protobuf) returns null and takes proto-loader's path.
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { BufferReader, Wire, type WireField } from '../util/protobuf-wire';
import type { InferInputTensor, ModelInferRequest, ModelInferResponse } from './kserve-tensors';
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

/** The ModelInferRequest proto-loader would build, or null when this message takes its path. */
export function decodeInferRequest(bytes: Buffer): ModelInferRequest | null {
  const r = new BufferReader(bytes);
  const req: ModelInferRequest & { parameters: object } = {
    model_name: '',
    model_version: '',
    id: '',
    parameters: {},
    inputs: [],
    outputs: [],
    raw_input_contents: [],
  };
  for (let at = 0; at < bytes.length; ) {
    const f = nextField(r, at, bytes.length);
    if (!f || (f.field >= 1 && f.field <= 7 && f.wire !== Wire.Len) || f.field === 4) return null;
    at = f.end;
    if (f.field === 1) req.model_name = r.text(f);
    else if (f.field === 2) req.model_version = r.text(f);
    else if (f.field === 3) req.id = r.text(f);
    else if (f.field === 5) {
      const input = req.inputs.length < MAX_ENTRIES ? decodeInput(r, f) : null;
      if (!input) return null;
      req.inputs.push(input);
    } else if (f.field === 6) {
      const name = req.outputs.length < MAX_ENTRIES ? decodeOutput(r, f) : null;
      if (name === null) return null;
      req.outputs.push({ name, parameters: {} } as { name: string });
    } else if (f.field === 7) {
      if (req.raw_input_contents.length >= MAX_ENTRIES) return null;
      req.raw_input_contents.push(bytes.subarray(f.payload, f.end));
    }
  }
  return req;
}

function decodeInput(r: BufferReader, tensor: WireField): InferInputTensor | null {
  const input = { name: '', datatype: '', shape: [] as string[], parameters: {}, contents: null };
  for (let at = tensor.payload; at < tensor.end; ) {
    const f = nextField(r, at, tensor.end);
    if (!f || f.field === 4 || f.field === 5) return null;
    at = f.end;
    if (f.field === 1 || f.field === 2) {
      if (f.wire !== Wire.Len) return null;
      if (f.field === 1) input.name = r.text(f);
      else input.datatype = r.text(f);
    } else if (f.field === 3 && !readShape(r, f, input.shape)) {
      return null;
    }
  }
  return input;
}

/** Packed or not, as protobufjs accepts either; dimensions as decimal strings (longs: String). */
function readShape(r: BufferReader, f: WireField, shape: string[]): boolean {
  if (f.wire === Wire.Varint) {
    if (shape.length >= MAX_DIMS) return false;
    shape.push(String(f.varint));
    return true;
  }
  if (f.wire !== Wire.Len) return false;
  for (let at = f.payload; at < f.end; ) {
    const d = shape.length < MAX_DIMS ? r.varint(at, f.end, kMaxVarintBytes) : -1;
    if (d < 0) return false;
    at = r.varintEnd;
    shape.push(String(d));
  }
  return true;
}

/** A requested output's name, or null. */
function decodeOutput(r: BufferReader, output: WireField): string | null {
  let name = '';
  for (let at = output.payload; at < output.end; ) {
    const f = nextField(r, at, output.end);
    if (!f || f.field === 2 || (f.field === 1 && f.wire !== Wire.Len)) return null;
    at = f.end;
    if (f.field === 1) name = r.text(f);
  }
  return name;
}

function varintSize(n: number): number {
  let size = 1;
  for (; n >= 0x80; n = Math.floor(n / 0x80)) size++;
  return size;
}

/** An output as fromOipAnswer builds it, when this encoder can write it: raw, no parameters. */
function plainOutput(o: ModelInferResponse['outputs'][number]): boolean {
  if (o.contents !== undefined || Object.keys(o.parameters).length > 0) return false;
  return o.shape.every((d) => Number.isSafeInteger(d) && d >= 0);
}

/** Writes a message into one exactly sized buffer: sizes first, then bytes. */
class Writer {
  at = 0;
  constructor(readonly out: Buffer) {}

  varint(n: number): void {
    for (; n >= 0x80; n = Math.floor(n / 0x80)) this.out[this.at++] = (n % 0x80) | 0x80;
    this.out[this.at++] = n;
  }

  bytes(number: number, b: Buffer): void {
    this.varint(number * 8 + Wire.Len);
    this.varint(b.length);
    this.at += b.copy(this.out, this.at);
  }

  string(number: number, s: string, size: number): void {
    this.varint(number * 8 + Wire.Len);
    this.varint(size);
    this.at += this.out.write(s, this.at, 'utf8');
  }
}

/** A Len field's whole size: its tag (all field numbers here take one byte), length and payload. */
const lenField = (payload: number) => 1 + varintSize(payload) + payload;

/** The ModelInferResponse as protobuf, or null when it takes proto-loader's path (typed contents, parameters). */
export function encodeInferResponse(res: ModelInferResponse): Buffer | null {
  if (!res.outputs.every(plainOutput)) return null;
  const strings = [res.model_name, res.model_version, res.id].map((s) => Buffer.byteLength(s));
  let size = strings.reduce((sum, n) => sum + (n > 0 ? lenField(n) : 0), 0);
  const outputs = res.outputs.map((o) => {
    const name = Buffer.byteLength(o.name);
    const datatype = Buffer.byteLength(o.datatype);
    const shape = o.shape.reduce((sum, d) => sum + varintSize(d), 0);
    const total = lenField(name) + lenField(datatype) + (o.shape.length > 0 ? lenField(shape) : 0);
    size += lenField(total);
    return { name, datatype, shape, total };
  });
  for (const b of res.raw_output_contents) size += lenField(b.length);
  const w = new Writer(Buffer.allocUnsafe(size));
  [res.model_name, res.model_version, res.id].forEach((s, i) => {
    if (strings[i] > 0) w.string(i + 1, s, strings[i]);
  });
  res.outputs.forEach((o, i) => {
    const sizes = outputs[i];
    w.varint(5 * 8 + Wire.Len);
    w.varint(sizes.total);
    w.string(1, o.name, sizes.name);
    w.string(2, o.datatype, sizes.datatype);
    if (o.shape.length === 0) return;
    w.varint(3 * 8 + Wire.Len);
    w.varint(sizes.shape);
    for (const d of o.shape) w.varint(d);
  });
  for (const b of res.raw_output_contents) w.bytes(6, b);
  return w.out;
}

/** `service` with ModelInfer's codecs in front of the ones it has (which take what these leave). */
export function withInferCodec(service: ServiceDefinition): ServiceDefinition {
  const method = (service as Record<string, MethodDefinition<unknown, unknown>>).ModelInfer;
  if (!method) return service;
  const modelInfer: MethodDefinition<unknown, unknown> = {
    ...method,
    requestDeserialize: (bytes: Buffer) => decodeInferRequest(bytes) ?? method.requestDeserialize(bytes),
    responseSerialize: (res: unknown) =>
      encodeInferResponse(res as ModelInferResponse) ?? method.responseSerialize(res),
  };
  return { ...service, ModelInfer: modelInfer };
}
