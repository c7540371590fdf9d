/**
 * application/json bodies ⇄ named tensors, in the four shapes clients send:
 *   {"inputs": {"<name>": nested}}                  → {"outputs": {"<name>": nested}}
 *   {"instances": [row, ...]}  (one-input models)   → {"predictions": ...}
 *   {"inputs": [{"name","shape","datatype","data"}]} (Open Inference Protocol v2) → v2 response
 *   [[...], ...]  bare array (SageMaker SDK JSONSerializer of an ndarray) → bare array
 */
import { quote, quoteValue } from '../errors';
import { ortTypeOf, rawStrings, V2_DATATYPES, v2Datatype } from '../oip/datatypes';
import type { V2InferResponse, V2Parameters, V2Tensor } from '../oip/types';
import type { TensorInfo } from '../model-types';
import { probabilityRows } from './classifier-answers';
import { fromNested, jsonElements, nest, shapeOf } from './nested-arrays';
import { countElements, invalidInput, Tensor, type PlainTensor, type RequestBudget } from './tensor';

export type JsonFormat = 'named' | 'instances' | 'v2' | 'bare';

/** Decoded inputs by the model's input names; no prototype, since a model may name an input "__proto__". */
export type Feeds = Record<string, Tensor>;

export function emptyFeeds(): Feeds {
  return Object.create(null) as Feeds;
}

/** What a v2 request asked of the answer: which outputs (all when it lists none), and which in binary. */
export interface OutputSelection {
  outputs?: Array<{ name: string; parameters?: V2Parameters }>;
  binaryAll: boolean;
}

export interface DecodedRequest {
  format: JsonFormat;
  feeds: Feeds;
  /** v2 request id, echoed in the response. */
  id?: string;
  selection?: OutputSelection;
}

/** What shapes an answer besides its tensors: how the request came, and the model. */
export interface EncodeMeta extends Omit<DecodedRequest, 'feeds'> {
  modelName: string;
  /** The request's Accept header: its parameters can shape the answer (classifier-answers.ts). */
  accept: string;
  outputs: readonly TensorInfo[];
}

export function describeInput(info: TensorInfo): string {
  return `${info.name} (${info.type} [${info.shape.join(', ')}])`;
}

export function decodeJson(parsed: unknown, inputs: readonly TensorInfo[], budget: RequestBudget): DecodedRequest {
  if (Array.isArray(parsed)) return { format: 'bare', feeds: single(parsed, inputs, 'the request body', budget) };
  if (parsed === null || typeof parsed !== 'object') {
    throw invalidInput(
      'the JSON body must be an object like {"inputs": {"<input name>": [[...]]}}, {"instances": [...]}, a v2 {"inputs": [{"name","shape","datatype","data"}]} body, or a bare nested array',
    );
  }
  const body = parsed as Record<string, unknown>;
  const instances = own(body, 'instances');
  if (Array.isArray(instances)) return { format: 'instances', feeds: single(instances, inputs, '"instances"', budget) };
  const given = own(body, 'inputs');
  if (Array.isArray(given)) return v2Request(body, decodeV2(given, inputs, budget));
  if (given && typeof given === 'object')
    return { format: 'named', feeds: decodeNamed(given as Record<string, unknown>, inputs, budget) };
  throw invalidInput(
    `the JSON body has no "inputs" or "instances" field; send {"inputs": {${inputs.map((i) => `"${i.name}": [...]`).join(', ')}}}`,
  );
}

/** A v2 request's feeds, with what its answer takes from the body: the id to echo, the outputs asked for. */
export function v2Request(body: object, feeds: Feeds): DecodedRequest {
  const id = own(body, 'id');
  return { format: 'v2', feeds, id: typeof id === 'string' ? id : undefined, selection: outputSelection(body) };
}

/** The `outputs` and `parameters.binary_data_output` of a v2 request body or inference header. */
export function outputSelection(header: object): OutputSelection {
  const outputs = own(header, 'outputs');
  if (outputs !== undefined) {
    const named = (o: unknown) => o && typeof o === 'object' && typeof own(o, 'name') === 'string';
    if (!Array.isArray(outputs) || !outputs.every(named))
      throw invalidInput('"outputs" must be a list of {"name": "<output name>"} objects');
    // Each name once: the answer would build an output once per mention (a 13 KB request naming one
    // output 1000 times cost a worker 2 GB). Every codec's request (v2 JSON, binary, gRPC) comes here.
    const seen = new Set<string>();
    for (const o of outputs as Array<{ name: string }>) {
      if (seen.has(o.name))
        throw invalidInput(`requested output ${quote(o.name)} is listed twice; name each output once`);
      seen.add(o.name);
    }
  }
  const parameters = own(header, 'parameters');
  return {
    outputs,
    binaryAll: !!parameters && typeof parameters === 'object' && own(parameters, 'binary_data_output') === true,
  };
}

/** The outputs a v2 answer holds, in the order asked; "__proto__" or "toString" must find nothing. */
export function selectedOutputs(
  outputs: Record<string, PlainTensor>,
  selection: OutputSelection | undefined,
): Array<[string, PlainTensor]> {
  if (!selection?.outputs) return Object.entries(outputs);
  return selection.outputs.map(({ name }) => {
    if (!Object.hasOwn(outputs, name))
      throw invalidInput(
        `requested output ${quote(name)} is not one of the model's outputs: ${Object.keys(outputs).join(', ')}`,
      );
    return [name, outputs[name]];
  });
}

/** A field of a client's object, never one inherited from Object.prototype. */
function own(o: object, key: string): unknown {
  return Object.hasOwn(o, key) ? (o as Record<string, unknown>)[key] : undefined;
}

/** Feeds for the model's only input; `what` names the one array the body holds, `send` the media type to use instead. */
export function onlyInput(
  inputs: readonly TensorInfo[],
  what: string,
  decode: (info: TensorInfo) => Tensor,
  send = '',
): Feeds {
  if (inputs.length !== 1) {
    throw invalidInput(
      `${what} can only feed a model with one input, but this model has ${inputs.length}: ${inputs.map(describeInput).join(', ')}; send ${send}{"inputs": {"<input name>": [...]}} instead`,
    );
  }
  const feeds = emptyFeeds();
  feeds[inputs[0].name] = decode(inputs[0]);
  return feeds;
}

function single(value: unknown[], inputs: readonly TensorInfo[], what: string, budget: RequestBudget): Feeds {
  return onlyInput(inputs, what, (info) => nestedTensor(info, value, budget));
}

function decodeNamed(given: Record<string, unknown>, inputs: readonly TensorInfo[], budget: RequestBudget): Feeds {
  checkNames(Object.keys(given), inputs);
  const feeds = emptyFeeds();
  for (const info of inputs) feeds[info.name] = nestedTensor(info, own(given, info.name), budget);
  return feeds;
}

/** A nested JSON array as the input's tensor: its nesting is its shape. */
function nestedTensor(info: TensorInfo, value: unknown, budget: RequestBudget): Tensor {
  const what = `input ${info.name}`;
  const dims = shapeOf(value, what);
  checkShape(info, dims);
  return Tensor.build(info.type, dims, budget, what, () => fromNested(info.type, value, dims, what));
}

/** v2 input tensors → feeds; `raw` holds the bytes of inputs sent in binary, the others carry JSON `data`. */
export function decodeV2(
  list: unknown[],
  inputs: readonly TensorInfo[],
  budget: RequestBudget,
  raw?: ReadonlyMap<unknown, Buffer>,
): Feeds {
  const byName = new Map<string, Record<string, unknown>>();
  for (const item of list) {
    const name = item && typeof item === 'object' ? own(item, 'name') : undefined;
    if (typeof name !== 'string')
      throw invalidInput(
        'each element of a v2 "inputs" list must be an object with "name", "shape", "datatype" and "data"',
      );
    if (byName.has(name)) throw invalidInput(`v2 input ${quote(name)} is listed twice; send each input once`);
    byName.set(name, item as Record<string, unknown>);
  }
  checkNames([...byName.keys()], inputs);
  const feeds = emptyFeeds();
  for (const info of inputs) {
    const item = byName.get(info.name)!;
    const what = `v2 input ${info.name}`;
    const shape = own(item, 'shape');
    const datatype = own(item, 'datatype');
    if (!Array.isArray(shape)) throw invalidInput(`${what}: "shape" must be a list of non-negative integers`);
    countElements(shape, what);
    const type = ortTypeOf(datatype);
    if (type === undefined)
      throw invalidInput(`${what}: datatype ${quoteValue(datatype)} is not one of ${V2_DATATYPES.join(', ')}`);
    if (type !== info.type)
      throw invalidInput(
        `${what}: datatype ${datatype as string} does not match the model's ${v2Datatype(info.type)} (${info.type})`,
      );
    checkShape(info, shape as number[]);
    const bytes = raw?.get(item);
    if (bytes)
      feeds[info.name] =
        type === 'string'
          ? Tensor.build(type, shape, budget, what, (n) => rawStrings(bytes, n, what))
          : Tensor.fromBytes(type, shape, bytes, false, budget, what, datatype as string);
    else feeds[info.name] = v2DataTensor(info, shape as number[], own(item, 'data'), budget, what);
  }
  return feeds;
}

/** JSON `data` of a v2 input: a flat list, or nested in any rectangular way with the shape's element count. */
function v2DataTensor(info: TensorInfo, shape: number[], data: unknown, budget: RequestBudget, what: string): Tensor {
  const dataDims = Array.isArray(data) ? shapeOf(data, `${what} "data"`) : [];
  return Tensor.build(info.type, shape, budget, what, (n) => {
    const given = dataDims.reduce((a, b) => a * b, 1);
    if (given !== n)
      throw invalidInput(`${what}: "data" has ${given} elements but shape [${shape.join(', ')}] needs ${n}`);
    return fromNested(info.type, data, dataDims, what);
  });
}

function checkNames(given: string[], inputs: readonly TensorInfo[]): void {
  const expected = new Set(inputs.map((i) => i.name));
  for (const name of given) {
    if (!expected.has(name))
      throw invalidInput(
        `unknown input ${quote(name)}; the model's inputs are: ${inputs.map(describeInput).join(', ')}`,
      );
  }
  const present = new Set(given);
  for (const info of inputs) {
    if (!present.has(info.name)) throw invalidInput(`missing input ${describeInput(info)}`);
  }
}

export function checkShape(info: TensorInfo, dims: readonly number[]): void {
  const ok =
    dims.length === info.shape.length && info.shape.every((d, i) => typeof d !== 'number' || d < 0 || d === dims[i]);
  if (!ok) {
    throw invalidInput(
      `input ${info.name} has shape [${dims.join(', ')}] but the model expects [${info.shape.join(', ')}] (${info.type}; named dimensions may be any size)`,
    );
  }
}

/** A v2 answer lists only the outputs the request named (in JSON whatever their binary_data). */
export function encodeJson(outputs: Record<string, PlainTensor>, meta: EncodeMeta): string {
  const { format, outputs: infos } = meta;
  const names = Object.keys(outputs);
  // Nested arrays; a ZipMap output's rows as {class label: probability} objects.
  const value = (n: string) => {
    const labels = infos.find((info) => info.name === n)?.classLabels;
    return labels ? probabilityRows(outputs[n], labels) : nest(jsonElements(outputs[n]), outputs[n].dims);
  };
  switch (format) {
    case 'named':
      return JSON.stringify({ outputs: Object.fromEntries(names.map((n) => [n, value(n)])) });
    case 'v2': {
      const tensors = selectedOutputs(outputs, meta.selection).map(([n, t]) => v2Output(n, t, infos, true));
      return JSON.stringify(v2Answer(meta, tensors));
    }
    case 'instances':
    case 'bare': {
      let body: unknown;
      if (names.length === 1) body = value(names[0]);
      else if (format === 'bare') body = Object.fromEntries(names.map((n) => [n, value(n)]));
      else body = perRow(names, names.map(value));
      return JSON.stringify(format === 'bare' ? body : { predictions: body });
    }
  }
}

/** A v2 answer around its output tensors: the model's name, and the request's id echoed. */
export function v2Answer(meta: EncodeMeta, outputs: V2Tensor[]): V2InferResponse {
  return { model_name: meta.modelName, ...(meta.id === undefined ? {} : { id: meta.id }), outputs };
}

/** One v2 output tensor; a ZipMap output goes as its [rows, classes] tensor, its labels beside it. */
export function v2Output(name: string, t: PlainTensor, infos: readonly TensorInfo[], withData: boolean): V2Tensor {
  const labels = infos.find((info) => info.name === name)?.classLabels;
  return {
    name,
    shape: t.dims,
    datatype: v2Datatype(t.type),
    ...(withData ? { data: jsonElements(t) } : {}),
    ...(labels ? { parameters: { class_labels: labels } } : {}),
  };
}

/** TF-Serving style: one object per instance, each holding that row of every output. */
function perRow(names: string[], nested: unknown[]): unknown[] {
  const rows = Math.max(...nested.map((v) => (Array.isArray(v) ? v.length : 1)));
  return Array.from({ length: rows }, (_, r) =>
    Object.fromEntries(names.map((n, i) => [n, Array.isArray(nested[i]) ? (nested[i] as unknown[])[r] : nested[i]])),
  );
}
