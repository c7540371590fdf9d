/**
 * What decoding a request message would build, counted from its wire bytes before protobufjs builds
 * any of it: an empty `bytes_contents` element is 2 bytes on the wire and ~270 in the heap, so a
 * message within max_request_size could cost hundreds of MB. Groups, wire types 6 and 7, and a
 * declared field in a wire type its type does not take are refused: protobufjs skips unknown groups
 * and decodes a declared field as its type whatever the tag says, so the walk and the decoder would
 * split the bytes differently. Invalid protobuf is left to the decoder to report.
 */
import { BufferReader, Wire, type WireField } from '../util/protobuf-wire';

/** Inputs, outputs and raw_input_contents of one ModelInferRequest; entries of a parameters or input map. */
export const MAX_ENTRIES = 1024;
/** Dimensions of one tensor's shape (numpy's NPY_MAXDIMS). */
export const MAX_DIMS = 64;
/** Typed-contents elements of one message, all inputs together (each becomes a JS value). */
export const MAX_TYPED_ELEMENTS = 1 << 20;
/** bytes_contents elements of one message (each becomes a Buffer object): larger BYTES go raw. */
export const MAX_TYPED_BYTES_ELEMENTS = 1 << 16;

/**
 * A message type as protobufjs decodes it: each declared field's wire types (a packed repeated
 * scalar: Len or its own) and, for a message or map field, its type, which the walk enters too.
 */
type Schema = ReadonlyMap<number, { wires: readonly Wire[]; of?: Schema }>;
const kLen = [Wire.Len];
const kPackable = [Wire.Len, Wire.Varint];
const schema = (entries: Array<[number, readonly Wire[], Schema?]>): Schema =>
  new Map(entries.map(([n, wires, of]) => [n, of ? { wires, of } : { wires }]));
const kParameter = schema([
  [1, [Wire.Varint]],
  [2, [Wire.Varint]],
  [3, kLen],
]);
/** A map entry: key 1, value 2 (bytes, or a message whose type is given). */
const mapEntry = (value?: Schema) =>
  schema([
    [1, kLen],
    [2, kLen, value],
  ]);
const kParameters = mapEntry(kParameter);
const kContents = schema([
  [1, kPackable],
  [2, kPackable],
  [3, kPackable],
  [4, kPackable],
  [5, kPackable],
  [6, [Wire.Len, Wire.Fixed32]],
  [7, [Wire.Len, Wire.Fixed64]],
  [8, kLen],
]);
const kInferRequest = schema([
  [1, kLen],
  [2, kLen],
  [3, kLen],
  [4, kLen, kParameters],
  [
    5,
    kLen,
    schema([
      [1, kLen],
      [2, kLen],
      [3, kPackable],
      [4, kLen, kParameters],
      [5, kLen, kContents],
    ]),
  ],
  [
    6,
    kLen,
    schema([
      [1, kLen],
      [2, kLen, kParameters],
    ]),
  ],
  [7, kLen],
]);
const kPredictionsRequest = schema([
  [1, kLen],
  [2, kLen],
  [3, kLen, mapEntry()],
  [4, kLen],
]);

/** Elements of a repeated scalar field occurrence: one unpacked value, or a packed run. */
function scalarCount(f: WireField, bytes: Buffer, fixedSize: number): number {
  if (f.wire !== Wire.Len) return 1;
  if (fixedSize > 0) return Math.floor((f.end - f.payload) / fixedSize);
  let n = 0;
  for (let i = f.payload; i < f.end; i++) if (bytes[i] < 0x80) n++;
  return n;
}

/** InferTensorContents field number → element size, from its wire types: 0 = varint, 4 or 8 fixed, -1 = bytes. */
const kElementSize: ReadonlyMap<number, number> = new Map(
  [...kContents].map(([n, { wires }]) => [
    n,
    wires.includes(Wire.Varint) ? 0 : wires.includes(Wire.Fixed32) ? 4 : wires.includes(Wire.Fixed64) ? 8 : -1,
  ]),
);

/**
 * Why bytes[start, end), a `message` of type `type`, must not reach the decoder: a group, a wire
 * type protobuf lacks, or a declared field in a wire type its type does not take, at any depth.
 */
function wireProblem(message: string, type: Schema, r: BufferReader, start: number, end: number): string | null {
  for (const f of r.fields(start, end)) {
    if (f.wire === Wire.StartGroup || f.wire === Wire.EndGroup)
      return `the ${message} has a group (field ${f.field}, wire type ${f.wire}); proto3 messages have none, so send the fields its .proto declares`;
    if (f.wire > Wire.Fixed32)
      return `the ${message} has a field of wire type ${f.wire} (field ${f.field}), which protobuf does not have; send the fields its .proto declares`;
    const declared = type.get(f.field);
    if (!declared) continue;
    if (!declared.wires.includes(f.wire))
      return `the ${message}'s field ${f.field} comes with wire type ${f.wire}, not its declared type's (${declared.wires.join(' or ')}); encode it as its .proto declares`;
    const inner = declared.of && wireProblem(message, declared.of, r, f.payload, f.end);
    if (inner) return inner;
  }
  return null;
}

const kInfer = 'ModelInferRequest';
const kPredictions = 'PredictionsRequest';

function over(count: number, limit: number, field: string, advice: string, message = kInfer): string | null {
  return count > limit ? `the ${message} has more than ${limit} ${field}; ${advice}` : null;
}

/** ModelInferRequest's repeated fields by number: what a message calls them, and the advice. */
const kRepeatedFields = new Map<number, [string, string]>([
  [4, ['parameters', 'send fewer']],
  [5, ['inputs', 'no model takes that many']],
  [6, ['outputs', 'no model answers that many']],
  [7, ['raw_input_contents entries', 'send one per input']],
]);

/** Why a KServe ModelInferRequest is refused before decoding, or null. */
export function inferRequestProblem(bytes: Buffer): string | null {
  const typed = { elements: 0, bytes: 0 };
  const counts = new Map<number, number>();
  const r = new BufferReader(bytes);
  const wrong = wireProblem(kInfer, kInferRequest, r, 0, bytes.length);
  if (wrong) return wrong;
  for (const f of r.fields(0, bytes.length)) {
    const n = (counts.get(f.field) ?? 0) + 1;
    counts.set(f.field, n);
    const repeated = kRepeatedFields.get(f.field);
    const problem =
      repeated && (over(n, MAX_ENTRIES, ...repeated) ?? (f.field === 5 ? inputProblem(r, f, typed) : null));
    if (problem) return problem;
  }
  return null;
}

/** One InferInputTensor's shape and parameters, and its typed contents added to the message's. */
function inputProblem(r: BufferReader, input: WireField, typed: { elements: number; bytes: number }): string | null {
  let dims = 0;
  let parameters = 0;
  for (const f of r.fields(input.payload, input.end)) {
    if (f.field === 3) dims += scalarCount(f, r.bytes, 0);
    else if (f.field === 4) parameters++;
    else if (f.field === 5) {
      for (const c of r.fields(f.payload, f.end)) {
        const size = kElementSize.get(c.field);
        if (size === undefined) continue;
        if (size < 0) typed.bytes++;
        else typed.elements += scalarCount(c, r.bytes, size);
      }
    }
    const problem =
      over(dims, MAX_DIMS, "dimensions in one input's shape", 'no tensor has that many') ??
      over(parameters, MAX_ENTRIES, 'parameters in one input', 'send fewer') ??
      over(
        typed.elements,
        MAX_TYPED_ELEMENTS,
        'elements in typed contents',
        'send large tensors in raw_input_contents',
      ) ??
      over(
        typed.bytes,
        MAX_TYPED_BYTES_ELEMENTS,
        'bytes_contents elements',
        'send large BYTES tensors in raw_input_contents',
      );
    if (problem) return problem;
  }
  return null;
}

/** Why a TorchServe PredictionsRequest is refused before decoding, or null. */
export function predictionsRequestProblem(bytes: Buffer): string | null {
  const r = new BufferReader(bytes);
  const wrong = wireProblem(kPredictions, kPredictionsRequest, r, 0, bytes.length);
  if (wrong) return wrong;
  let entries = 0;
  for (const f of r.fields(0, bytes.length)) if (f.field === 3) entries++;
  return over(entries, MAX_ENTRIES, 'input entries', 'send the body as "data" and at most a few headers', kPredictions);
}
