/**
 * ModelInferRequest ⇄ the OIP body the worker reads (src/oip/binary-body.ts): every tensor travels
 * binary, typed `contents` packed into the raw layout here; none passes through JSON.
 */
import { errorOf, quote, quoteValue } from '../errors';
import { sliceBinary, type SplitBody } from '../oip/binary-body';
import { contentsField, fromRaw, ortTypeOf, toArray, toRaw, V2_DATATYPES } from '../oip/datatypes';
import { MODEL_VERSION } from '../gateway/oip/model-metadata';
import type { V2InferRequest, V2InferResponse, V2Parameters } from '../oip/types';

const invalid = errorOf('MME_ERR_INVALID_INPUT');

type Contents = Record<string, unknown[]>;
type InferParameter = {
  bool_param?: boolean;
  int64_param?: string;
  string_param?: string;
  /** Which one the client set (proto-loader's oneofs). */
  parameter_choice?: string;
};

export interface InferInputTensor {
  name: string;
  datatype: string;
  shape: string[];
  contents: Contents | null;
}

export interface ModelInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  inputs: InferInputTensor[];
  outputs: Array<{ name: string }>;
  raw_input_contents: Buffer[];
  /** The request's own parameters: present on proto-loader's path only (infer-codec.ts leaves requests with any to it). */
  parameters?: Record<string, InferParameter>;
}

export interface ModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  outputs: Array<{
    name: string;
    datatype: string;
    shape: number[];
    parameters: Record<string, InferParameter>;
    contents?: Contents;
  }>;
  raw_output_contents: Buffer[];
}

/** Dimensions an error message lists; a shape's length is the client's to choose. */
const kShownDims = 8;

function shapeText(shape: readonly number[]): string {
  const shown = shape.slice(0, kShownDims).join(', ');
  return shape.length <= kShownDims ? `[${shown}]` : `[${shown}, …] (${shape.length} dimensions)`;
}

function checkedShape(t: InferInputTensor): number[] {
  const what = `input ${quote(t.name)}`;
  if (ortTypeOf(t.datatype) === undefined)
    throw invalid(`${what}: datatype ${quote(t.datatype)} is not one of ${V2_DATATYPES.join(', ')}`);
  return t.shape.map((d) => {
    const n = Number(d);
    if (!Number.isSafeInteger(n) || n < 0)
      throw invalid(`${what}: shape dimension ${quoteValue(d)} is not a non-negative integer`);
    return n;
  });
}

function typedToRaw(t: InferInputTensor, shape: readonly number[]): Buffer {
  const what = `input ${quote(t.name)}`;
  const field = contentsField(t.datatype);
  if (!field) throw invalid(`${what}: datatype ${t.datatype} has no typed contents; send it in raw_input_contents`);
  const values = t.contents?.[field] ?? [];
  const count = shape.reduce((a, b) => a * b, 1);
  if (values.length !== count)
    throw invalid(
      `${what}: contents.${field} holds ${values.length} elements, but shape ${shapeText(shape)} needs ${count}`,
    );
  return t.datatype === 'BYTES' ? toRaw(values as Buffer[]) : toRaw(toArray(t.datatype, values, what));
}

function hasTypedContents(t: InferInputTensor): boolean {
  return t.contents !== null && Object.values(t.contents).some((values) => values.length > 0);
}

/** parameters.timeout and .priority, which the gateway reads from the JSON header as it does a REST client's. */
function controls(req: ModelInferRequest): V2Parameters {
  const out: V2Parameters = {};
  for (const key of ['timeout', 'priority']) {
    const p = req.parameters && Object.hasOwn(req.parameters, key) ? req.parameters[key] : undefined;
    if (p?.parameter_choice) out[key] = (p as Record<string, unknown>)[p.parameter_choice];
  }
  return out;
}

/** The request as a JSON header plus one binary tensor per input, which go to the worker back to back. */
export function toOipBody(req: ModelInferRequest): { header: Buffer; binaries: Buffer[] } {
  const raw = req.raw_input_contents;
  if (raw.length > 0 && raw.length !== req.inputs.length) {
    throw invalid(
      `raw_input_contents has ${raw.length} entries but there are ${req.inputs.length} inputs; send one per input, in the order of inputs`,
    );
  }
  // As in Triton: with both, which one the model should see is anyone's guess.
  const typed = raw.length > 0 ? req.inputs.find(hasTypedContents) : undefined;
  if (typed)
    throw invalid(
      `input ${quote(typed.name)} has typed contents, but the request sends raw_input_contents; send every input in one of them`,
    );
  const shapes = req.inputs.map(checkedShape);
  const binaries = req.inputs.map((t, i) => (raw.length > 0 ? raw[i] : typedToRaw(t, shapes[i])));
  const header: V2InferRequest = {
    ...(req.id ? { id: req.id } : {}),
    inputs: req.inputs.map((t, i) => ({
      name: t.name,
      datatype: t.datatype,
      shape: shapes[i],
      parameters: { binary_data_size: binaries[i].length },
    })),
    ...(req.outputs.length > 0 ? { outputs: req.outputs.map((o) => ({ name: o.name })) } : {}),
    parameters: { binary_data_output: true, ...controls(req) },
  };
  return { header: Buffer.from(JSON.stringify(header)), binaries };
}

function inferParameter(v: unknown): InferParameter {
  if (typeof v === 'boolean') return { bool_param: v };
  if (Number.isSafeInteger(v)) return { int64_param: String(v) };
  return { string_param: typeof v === 'string' ? v : JSON.stringify(v) };
}

/**
 * Output parameters other than the binary framing, as InferParameters (lists, e.g. class_labels,
 * as JSON text). A handler names them: Object.fromEntries keeps "__proto__" an entry like any other.
 */
function inferParameters(params: V2Parameters | undefined): Record<string, InferParameter> {
  return Object.fromEntries(
    Object.entries(params ?? {})
      .filter(([k]) => k !== 'binary_data_size')
      .map(([k, v]) => [k, inferParameter(v)]),
  );
}

function typedContents(datatype: string, bytes: Buffer, shape: readonly number[]): Contents {
  const count = shape.reduce((a, b) => a * b, 1);
  const elements = fromRaw(datatype, bytes, count, 'output');
  let values: unknown[];
  if (Array.isArray(elements)) values = elements;
  else if (datatype === 'BOOL') values = Array.from(elements as Uint8Array, (x) => x !== 0);
  else if (elements instanceof BigInt64Array || elements instanceof BigUint64Array)
    values = Array.from(elements as ArrayLike<bigint>, String);
  else values = Array.from(elements as ArrayLike<number>);
  return { [contentsField(datatype)!]: values };
}

/** The worker's answer as a ModelInferResponse; `raw` = answer in raw_output_contents (FP16 outputs force it). */
export function fromOipAnswer(answer: SplitBody<V2InferResponse>, raw: boolean): ModelInferResponse {
  const { header } = answer;
  const pieces = sliceBinary(
    answer.binary,
    header.outputs.map((o) => o.parameters?.binary_data_size ?? 0),
  );
  const asRaw = raw || header.outputs.some((o) => contentsField(o.datatype) === undefined);
  return {
    model_name: header.model_name,
    model_version: MODEL_VERSION,
    id: header.id ?? '',
    outputs: header.outputs.map((o, i) => ({
      name: o.name,
      datatype: o.datatype,
      shape: o.shape,
      parameters: inferParameters(o.parameters),
      ...(asRaw ? {} : { contents: typedContents(o.datatype, pieces[i], o.shape) }),
    })),
    raw_output_contents: asRaw ? pieces : [],
  };
}
