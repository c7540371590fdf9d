/**
 * ModelInfer's two messages without protobufjs, for the common shape: a request whose tensors
 * travel in raw_input_contents, and an answer in raw_output_contents. proto-loader's path walks the
 * wire for the limits (message-limits.ts), decodes into protobufjs messages, then converts them
 * with toObject (longs, defaults): three passes and two object graphs. Here one pass builds the
 * object the handler reads, counting as it goes, and an answer is written straight into its buffer.
 *
 * Anything else returns null and takes proto-loader's path, which stays the reference: typed
 * contents, parameters, a dimension past 2^49, a count over a limit (so the refusal is the limits
 * walk's, word for word), a message that is not well-formed protobuf.
 */
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import type { InferInputTensor, ModelInferRequest, ModelInferResponse } from './kserve-tensors';
import { MAX_DIMS, MAX_ENTRIES } from './message-limits';

const enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  Fixed32 = 5,
}

/** Beyond 7 varint bytes (2^49) a value is left to protobufjs, which reads 64 bits exactly. */
const kMaxVarintBytes = 7;

/** A read position over one message, reused: the decoder allocates only what it returns. */
class Reader {
  at = 0;
  constructor(readonly bytes: Buffer) {}

  /** The next varint, or -1 when it is cut short or longer than kMaxVarintBytes. */
  varint(end: number): number {
    const b = this.bytes;
    let value = 0;
    for (let i = 0, scale = 1; i < kMaxVarintBytes && this.at < end; i++, scale *= 0x80) {
      const byte = b[this.at++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
    }
    return -1;
  }

  /** The end of the length-delimited payload that starts here, or -1. */
  payloadEnd(end: number): number {
    const n = this.varint(end);
    return n < 0 || this.at + n > end ? -1 : this.at + n;
  }

  /** Skips a field this decoder does not read; false for groups and anything malformed. */
  skip(wire: number, end: number): boolean {
    if (wire === Wire.Varint) return this.varint(end) >= 0;
    if (wire === Wire.Len) {
      const e = this.payloadEnd(end);
      this.at = e;
      return e >= 0;
    }
    const size = wire === Wire.Fixed64 ? 8 : wire === Wire.Fixed32 ? 4 : -1;
    if (size < 0 || this.at + size > end) return false;
    this.at += size;
    return true;
  }

  string(end: number): string | null {
    const e = this.payloadEnd(end);
    if (e < 0) return null;
    const s = this.bytes.toString('utf8', this.at, e);
    this.at = e;
    return s;
  }
}

/** The ModelInferRequest proto-loader would build, or null when this message takes its path. */
export function decodeInferRequest(bytes: Buffer): ModelInferRequest | null {
  const r = new Reader(bytes);
  const req: ModelInferRequest & { parameters: object } = {
    model_name: '',
    model_version: '',
    id: '',
    parameters: {},
    inputs: [],
    outputs: [],
    raw_input_contents: [],
  };
  const end = bytes.length;
  while (r.at < end) {
    const tag = r.varint(end);
    if (tag < 0) return null;
    const number = Math.floor(tag / 8);
    const wire = tag % 8;
    if (number >= 1 && number <= 7 && wire !== Wire.Len) return null;
    if (number === 1 || number === 2 || number === 3) {
      const s = r.string(end);
      if (s === null) return null;
      if (number === 1) req.model_name = s;
      else if (number === 2) req.model_version = s;
      else req.id = s;
    } else if (number === 5) {
      const input = req.inputs.length < MAX_ENTRIES ? decodeInput(r, end) : null;
      if (!input) return null;
      req.inputs.push(input);
    } else if (number === 6) {
      const name = req.outputs.length < MAX_ENTRIES ? decodeOutput(r, end) : null;
      if (name === null) return null;
      req.outputs.push({ name, parameters: {} } as { name: string });
    } else if (number === 7) {
      const e = req.raw_input_contents.length < MAX_ENTRIES ? r.payloadEnd(end) : -1;
      if (e < 0) return null;
      req.raw_input_contents.push(bytes.subarray(r.at, e));
      r.at = e;
    } else if (number === 4 || !r.skip(wire, end)) {
      return null;
    }
  }
  return req;
}

function decodeInput(r: Reader, outer: number): InferInputTensor | null {
  const end = r.payloadEnd(outer);
  if (end < 0) return null;
  const input = { name: '', datatype: '', shape: [] as string[], parameters: {}, contents: null };
  while (r.at < end) {
    const tag = r.varint(end);
    if (tag < 0) return null;
    const number = Math.floor(tag / 8);
    const wire = tag % 8;
    if (number === 1 || number === 2) {
      const s = wire === Wire.Len ? r.string(end) : null;
      if (s === null) return null;
      if (number === 1) input.name = s;
      else input.datatype = s;
    } else if (number === 3) {
      if (!readShape(r, wire, end, input.shape)) return null;
    } else if (number === 4 || number === 5 || !r.skip(wire, end)) {
      return null;
    }
  }
  return input;
}

/** Packed or not, as protobufjs accepts either; dimensions as decimal strings (longs: String). */
function readShape(r: Reader, wire: number, end: number, shape: string[]): boolean {
  const stop = wire === Wire.Len ? r.payloadEnd(end) : wire === Wire.Varint ? end : -1;
  if (stop < 0) return false;
  do {
    const d = shape.length < MAX_DIMS ? r.varint(stop) : -1;
    if (d < 0) return false;
    shape.push(String(d));
  } while (wire === Wire.Len && r.at < stop);
  return true;
}

/** A requested output's name, or null. */
function decodeOutput(r: Reader, outer: number): string | null {
  const end = r.payloadEnd(outer);
  if (end < 0) return null;
  let name = '';
  while (r.at < end) {
    const tag = r.varint(end);
    if (tag < 0) return null;
    const number = Math.floor(tag / 8);
    const wire = tag % 8;
    if (number === 1) {
      const s = wire === Wire.Len ? r.string(end) : null;
      if (s === null) return null;
      name = s;
    } else if (number === 2 || !r.skip(wire, end)) {
      return null;
    }
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
