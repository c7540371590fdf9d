/**
 * KServe's ModelInferRequest and ModelInferResponse in protobuf, as gRPC ModelInfer carries them:
 * the server hands the worker the request's bytes and the client the answer's, so no tensor is
 * converted twice. Typed contents are packed into the raw layout here, then every input takes the
 * v2 codec's checks (decodeV2). The gRPC door has refused messages over its limits before they get
 * here (grpc/message-limits.ts); from HTTP nothing did, so nothing here makes an object per element.
 */
import { quote, quoteValue } from '../errors';
import { contentsField, ortTypeOf, toArray, toRaw, V2_DATATYPES, v2Datatype } from '../oip/datatypes';
import { MODEL_VERSION } from '../oip/server-identity';
import { MODEL_INFER_MEDIA_TYPE } from '../protocol/messages';
import { BufferReader, Wire, type WireField } from '../util/protobuf-wire';
import type { TensorInfo } from '../model-types';
import type { HandlerRequest } from './context';
import { decodeV2, selectedOutputs, v2Output, v2Request, type DecodedRequest, type EncodeMeta } from './json-codec';
import type { EncodedBody } from './oip-codec';
import { invalidInput, type PlainTensor, type RequestBudget } from './tensor';

/** InferTensorContents' fields by number (1-based): its datatype's contentsField names one. */
const kContents = 'bool int int64 uint uint64 fp32 fp64 bytes'.split(' ').map((type) => `${type}_contents`);
const kBytesField = 8;

interface WireInput {
  name: string;
  datatype: string;
  /** A dimension past 2^53 or below 0 as its decimal text, for the error that quotes it. */
  shape: Array<number | string>;
  /** Typed elements by contents field number; BYTES elements as [start, end) pairs of the message. */
  contents: Map<number, Array<number | bigint | boolean>>;
  bytes: number[];
}

function malformed(at: number): Error {
  return invalidInput(
    `the ${MODEL_INFER_MEDIA_TYPE} body is not a KServe ModelInferRequest (malformed protobuf at byte ${at}); encode it with grpc_predict_v2.proto`,
  );
}

/** The fields of [from, to); anything not a well-formed field is an error. */
function* fields(r: BufferReader, from: number, to: number): Generator<WireField> {
  let at = from;
  for (const f of r.fields(from, to)) {
    if (f.wire === Wire.StartGroup || f.wire === Wire.EndGroup || f.wire > Wire.Fixed32) break;
    yield f;
    at = f.end;
  }
  if (at < to) throw malformed(at);
}

/** Beyond 7 bytes (2^49) a varint is read as a bigint, exact to 64 bits. */
const kNumberBytes = 7;

/** Each varint of a packed (Len) or single (Varint) occurrence: a number below 2^49, else a bigint. */
function varints(r: BufferReader, f: WireField, take: (v: number | bigint) => void): void {
  if (f.wire !== Wire.Len && f.wire !== Wire.Varint) return;
  const b = r.bytes;
  for (let at = f.payload; at < f.end; ) {
    const n = r.varint(at, f.end, kNumberBytes);
    if (n >= 0) {
      at = r.varintEnd;
      take(n);
      continue;
    }
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (at >= f.end || shift > 63n) throw malformed(at);
      const byte = b[at++];
      v |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    take(v);
  }
}

/** Each float of a packed (Len) or single (Fixed32/64) occurrence. */
function floats(r: BufferReader, f: WireField, size: 4 | 8, take: (v: number) => void): void {
  if (f.wire !== Wire.Len && f.wire !== (size === 4 ? Wire.Fixed32 : Wire.Fixed64)) return;
  if ((f.end - f.payload) % size !== 0) throw malformed(f.payload);
  for (let at = f.payload; at < f.end; at += size)
    take(size === 4 ? r.bytes.readFloatLE(at) : r.bytes.readDoubleLE(at));
}

/** A varint as the contents field's type decodes it (protobufjs's int32 keeps the low 32 bits). */
const kFromVarint: Record<number, (v: number | bigint) => number | bigint | boolean> = {
  1: (v) => Number(v) !== 0,
  2: (v) => Number(BigInt.asIntN(32, BigInt(v))),
  3: (v) => BigInt.asIntN(64, BigInt(v)),
  4: (v) => Number(BigInt.asUintN(32, BigInt(v))),
  5: (v) => BigInt.asUintN(64, BigInt(v)),
};

function readContents(r: BufferReader, message: WireField, t: WireInput): void {
  for (const f of fields(r, message.payload, message.end)) {
    if (f.field === kBytesField) {
      if (f.wire === Wire.Len) t.bytes.push(f.payload, f.end);
      continue;
    }
    if (f.field < 1 || f.field > kBytesField) continue;
    const values = t.contents.get(f.field) ?? [];
    t.contents.set(f.field, values);
    const push = (v: number | bigint | boolean) => values.push(v);
    if (f.field <= 5) varints(r, f, (v) => push(kFromVarint[f.field](v)));
    else floats(r, f, f.field === 6 ? 4 : 8, push);
  }
}

function readInput(r: BufferReader, tensor: WireField): WireInput {
  const t: WireInput = { name: '', datatype: '', shape: [], contents: new Map(), bytes: [] };
  for (const f of fields(r, tensor.payload, tensor.end)) {
    if (f.field === 1 && f.wire === Wire.Len) t.name = r.text(f);
    else if (f.field === 2 && f.wire === Wire.Len) t.datatype = r.text(f);
    else if (f.field === 3)
      varints(r, f, (v) => {
        const d = typeof v === 'number' ? v : BigInt.asIntN(64, v);
        t.shape.push(d >= 0 && d <= Number.MAX_SAFE_INTEGER ? Number(d) : String(d));
      });
    else if (f.field === 5 && f.wire === Wire.Len) readContents(r, f, t);
  }
  return t;
}

/** Dimensions an error message lists; a shape's length is the client's to choose. */
const kShownDims = 8;

function shapeText(shape: readonly number[]): string {
  const shown = shape.slice(0, kShownDims).join(', ');
  return shape.length <= kShownDims ? `[${shown}]` : `[${shown}, …] (${shape.length} dimensions)`;
}

function checkedShape(t: WireInput): number[] {
  const what = `input ${quote(t.name)}`;
  if (ortTypeOf(t.datatype) === undefined)
    throw invalidInput(`${what}: datatype ${quote(t.datatype)} is not one of ${V2_DATATYPES.join(', ')}`);
  return t.shape.map((d) => {
    if (typeof d === 'string')
      throw invalidInput(`${what}: shape dimension ${quoteValue(d)} is not a non-negative integer`);
    return d;
  });
}

function typedToRaw(t: WireInput, shape: readonly number[], bytes: Buffer): Buffer {
  const what = `input ${quote(t.name)}`;
  const field = contentsField(t.datatype);
  if (!field)
    throw invalidInput(`${what}: datatype ${t.datatype} has no typed contents; send it in raw_input_contents`);
  const number = kContents.indexOf(field) + 1;
  const count = shape.reduce((a, b) => a * b, 1);
  const given = number === kBytesField ? t.bytes.length / 2 : (t.contents.get(number)?.length ?? 0);
  if (given !== count)
    throw invalidInput(
      `${what}: contents.${field} holds ${given} elements, but shape ${shapeText(shape)} needs ${count}`,
    );
  if (number !== kBytesField) return toRaw(toArray(t.datatype, t.contents.get(number) ?? [], what));
  const elements: Buffer[] = [];
  for (let i = 0; i < t.bytes.length; i += 2) elements.push(bytes.subarray(t.bytes[i], t.bytes[i + 1]));
  return toRaw(elements);
}

function hasTypedContents(t: WireInput): boolean {
  return t.bytes.length > 0 || [...t.contents.values()].some((values) => values.length > 0);
}

export function decodeModelInfer(
  req: HandlerRequest,
  inputs: readonly TensorInfo[],
  budget: RequestBudget,
): DecodedRequest {
  const bytes = req.body;
  const r = new BufferReader(bytes);
  let id = '';
  const given: WireInput[] = [];
  const outputs: Array<{ name: string }> = [];
  const raw: Buffer[] = [];
  for (const f of fields(r, 0, bytes.length)) {
    if (f.wire !== Wire.Len) continue;
    if (f.field === 3) id = r.text(f);
    else if (f.field === 5) given.push(readInput(r, f));
    else if (f.field === 6) {
      let name = '';
      for (const o of fields(r, f.payload, f.end)) if (o.field === 1 && o.wire === Wire.Len) name = r.text(o);
      outputs.push({ name });
    } else if (f.field === 7) raw.push(bytes.subarray(f.payload, f.end));
  }
  if (raw.length > 0 && raw.length !== given.length) {
    throw invalidInput(
      `raw_input_contents has ${raw.length} entries but there are ${given.length} inputs; send one per input, in the order of inputs`,
    );
  }
  // As in Triton: with both, which one the model should see is anyone's guess.
  const typed = raw.length > 0 ? given.find(hasTypedContents) : undefined;
  if (typed)
    throw invalidInput(
      `input ${quote(typed.name)} has typed contents, but the request sends raw_input_contents; send every input in one of them`,
    );
  const list = given.map((t) => ({ name: t.name, datatype: t.datatype, shape: checkedShape(t) }));
  const binaries = new Map(list.map((item, i) => [item, raw[i] ?? typedToRaw(given[i], item.shape, bytes)]));
  const feeds = decodeV2(list, inputs, budget, binaries);
  // An answer in raw_output_contents when the request came raw.
  const parameters = { binary_data_output: raw.length > 0 };
  return v2Request({ id: id || undefined, outputs: outputs.length > 0 ? outputs : undefined, parameters }, feeds);
}

/** Protobuf bytes, written as pieces and joined once. */
class Writer {
  readonly #pieces: Buffer[] = [];
  #head: number[] = [];

  /** A negative value as its 64-bit two's complement (ten bytes), as protobuf writes int32 and int64. */
  varint(v: number | bigint | boolean): void {
    if (typeof v === 'number' && v >= 0 && v <= 0x7fffffff) {
      for (; v >= 0x80; v >>>= 7) this.#head.push((v & 0x7f) | 0x80);
      this.#head.push(v);
      return;
    }
    let n = BigInt.asUintN(64, BigInt(v));
    for (; n >= 0x80n; n >>= 7n) this.#head.push(Number(n & 0x7fn) | 0x80);
    this.#head.push(Number(n));
  }

  bytes(field: number, b: Buffer): void {
    this.varint(field * 8 + Wire.Len);
    this.varint(b.length);
    this.#pieces.push(Buffer.from(this.#head), b);
    this.#head = [];
  }

  string(field: number, s: string): void {
    if (s) this.bytes(field, Buffer.from(s));
  }

  message(field: number, write: (w: Writer) => void): void {
    const inner = new Writer();
    write(inner);
    this.bytes(field, inner.finish());
  }

  packed(field: number, values: ArrayLike<number | bigint | boolean>): void {
    if (values.length === 0) return;
    const inner = new Writer();
    for (let i = 0; i < values.length; i++) inner.varint(values[i]);
    this.bytes(field, inner.finish());
  }

  finish(): Buffer {
    if (this.#head.length > 0) this.#pieces.push(Buffer.from(this.#head));
    return Buffer.concat(this.#pieces);
  }
}

/** InferParameter: bool_param 1, int64_param 2, string_param 3 (lists, e.g. class_labels, as JSON text). */
function inferParameter(w: Writer, v: unknown): void {
  if (typeof v === 'boolean' || Number.isSafeInteger(v)) {
    w.varint((typeof v === 'boolean' ? 1 : 2) * 8 + Wire.Varint);
    w.varint(v as number | boolean);
  } else w.bytes(3, Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)));
}

/** An output's elements in its datatype's contents field. */
function typedContents(w: Writer, datatype: string, t: PlainTensor): void {
  const number = kContents.indexOf(contentsField(datatype)!) + 1;
  const data = t.data as ArrayLike<number | bigint | string | Buffer>;
  if (number === 6 || number === 7) {
    if (data.length > 0) w.bytes(number, toRaw(t.data));
  } else if (number === kBytesField) {
    for (const s of data as ReadonlyArray<string | Buffer>) w.bytes(number, Buffer.isBuffer(s) ? s : Buffer.from(s));
  } else w.packed(number, data as ArrayLike<number | bigint>);
}

/** The ModelInferResponse: raw_output_contents when the request came raw or an output has no typed field (FP16). */
export function encodeModelInfer(outputs: Record<string, PlainTensor>, meta: EncodeMeta): EncodedBody {
  const selected = selectedOutputs(outputs, meta.selection);
  const asRaw =
    meta.selection?.binaryAll === true || selected.some(([, t]) => contentsField(v2Datatype(t.type)) === undefined);
  const w = new Writer();
  w.string(1, meta.modelName);
  w.string(2, MODEL_VERSION);
  w.string(3, meta.id ?? '');
  for (const [name, t] of selected) {
    const o = v2Output(name, t, meta.outputs, false);
    w.message(5, (m) => {
      m.string(1, o.name);
      m.string(2, o.datatype);
      m.packed(3, o.shape);
      for (const [key, value] of Object.entries(o.parameters ?? {}))
        m.message(4, (e) => {
          e.string(1, key);
          e.message(2, (p) => inferParameter(p, value));
        });
      if (!asRaw) m.message(5, (c) => typedContents(c, o.datatype, t));
    });
  }
  if (asRaw) for (const [, t] of selected) w.bytes(6, toRaw(t.data));
  return { body: w.finish(), contentType: MODEL_INFER_MEDIA_TYPE };
}
