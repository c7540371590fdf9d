/**
 * application/json bodies ⇄ named tensors, in the four shapes clients send:
 *   {"inputs": {"<name>": nested}}                  → {"outputs": {"<name>": nested}}
 *   {"instances": [row, ...]}  (one-input models)   → {"predictions": ...}
 *   {"inputs": [{"name","shape","datatype","data"}]} (Open Inference Protocol v2) → v2 response
 *   [[...], ...]  bare array (SageMaker SDK JSONSerializer of an ndarray) → bare array
 */
import { MmeError } from '../errors';
import { V2_TO_ORT, v2Datatype, fromRaw } from '../oip/datatypes';
import type { V2Tensor } from '../oip/types';
import type { TensorInfo } from '../protocol/frames';
import { probabilityRows } from './classifier-answers';
import type { OutputSelection } from './oip-codec';
import { elementCount, fromNested, jsonElements, nest, shapeOf, type PlainTensor, type TensorData } from './tensors';

export type JsonFormat = 'named' | 'instances' | 'v2' | 'bare';

export interface DecodedRequest {
  format: JsonFormat;
  feeds: Record<string, PlainTensor>;
  /** v2 request id, echoed in the response. */
  id?: string;
  /** OIP requests: which outputs to answer, and which in binary (oip-codec.ts). */
  selection?: OutputSelection;
}

export function describeInput(info: TensorInfo): string {
  return `${info.name} (${info.type} [${info.shape.join(', ')}])`;
}

function invalid(message: string): MmeError {
  return new MmeError('MME_ERR_INVALID_INPUT', message);
}

export function decodeJson(parsed: unknown, inputs: readonly TensorInfo[]): DecodedRequest {
  if (Array.isArray(parsed)) return { format: 'bare', feeds: single(parsed, inputs, 'the request body') };
  if (parsed === null || typeof parsed !== 'object') {
    throw invalid('the JSON body must be an object like {"inputs": {"<input name>": [[...]]}}, {"instances": [...]}, a v2 {"inputs": [{"name","shape","datatype","data"}]} body, or a bare nested array');
  }
  const body = parsed as Record<string, unknown>;
  if (Array.isArray(body.instances)) return { format: 'instances', feeds: single(body.instances, inputs, '"instances"') };
  if (Array.isArray(body.inputs)) return { format: 'v2', feeds: decodeV2(body.inputs, inputs), id: typeof body.id === 'string' ? body.id : undefined };
  if (body.inputs && typeof body.inputs === 'object') return { format: 'named', feeds: decodeNamed(body.inputs as Record<string, unknown>, inputs) };
  throw invalid(`the JSON body has no "inputs" or "instances" field; send {"inputs": {${inputs.map((i) => `"${i.name}": [...]`).join(', ')}}}`);
}

function single(value: unknown[], inputs: readonly TensorInfo[], what: string): Record<string, PlainTensor> {
  if (inputs.length !== 1) {
    throw invalid(`${what} can only feed a model with one input, but this model has ${inputs.length}: ${inputs.map(describeInput).join(', ')}; send {"inputs": {"<input name>": [...]}} instead`);
  }
  const info = inputs[0];
  return { [info.name]: toTensor(info, value, shapeOf(value, `input ${info.name}`)) };
}

function decodeNamed(given: Record<string, unknown>, inputs: readonly TensorInfo[]): Record<string, PlainTensor> {
  checkNames(Object.keys(given), inputs);
  const feeds: Record<string, PlainTensor> = {};
  for (const info of inputs) {
    const value = given[info.name];
    feeds[info.name] = toTensor(info, value, shapeOf(value, `input ${info.name}`));
  }
  return feeds;
}

/**
 * v2 input tensors → feeds. `raw` holds the bytes of inputs sent in binary (the binary tensor
 * extension, or gRPC raw contents); the others carry JSON `data`.
 */
export function decodeV2(list: unknown[], inputs: readonly TensorInfo[], raw?: ReadonlyMap<unknown, Buffer>): Record<string, PlainTensor> {
  const byName = new Map<string, Record<string, unknown>>();
  for (const item of list) {
    if (!item || typeof item !== 'object' || typeof (item as { name?: unknown }).name !== 'string') {
      throw invalid('each element of a v2 "inputs" list must be an object with "name", "shape", "datatype" and "data"');
    }
    byName.set((item as { name: string }).name, item as Record<string, unknown>);
  }
  checkNames([...byName.keys()], inputs);
  const feeds: Record<string, PlainTensor> = {};
  for (const info of inputs) {
    const item = byName.get(info.name)!;
    const { shape, datatype, data } = item;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw invalid(`v2 input ${info.name}: "shape" must be a list of non-negative integers`);
    }
    const type = typeof datatype === 'string' ? V2_TO_ORT[datatype] : undefined;
    if (type === undefined) throw invalid(`v2 input ${info.name}: datatype ${JSON.stringify(datatype)} is not one of ${Object.keys(V2_TO_ORT).join(', ')}`);
    if (type !== info.type) throw invalid(`v2 input ${info.name}: datatype ${datatype} does not match the model's ${v2Datatype(info.type)} (${info.type})`);
    const bytes = raw?.get(item);
    if (bytes) {
      checkShape(info, shape);
      const elements = fromRaw(datatype as string, bytes, elementCount(shape), `v2 input ${info.name}`);
      const data = Array.isArray(elements) ? elements.map((b) => b.toString('utf8')) : elements;
      feeds[info.name] = { type, dims: shape, data: data as TensorData };
      continue;
    }
    const flat = Array.isArray(data) ? (data as unknown[]).flat(Infinity) : [data];
    if (flat.length !== elementCount(shape)) {
      throw invalid(`v2 input ${info.name}: "data" has ${flat.length} elements but shape [${shape.join(', ')}] needs ${elementCount(shape)}`);
    }
    feeds[info.name] = toTensor(info, flat, shape, [flat.length]);
  }
  return feeds;
}

function checkNames(given: string[], inputs: readonly TensorInfo[]): void {
  const expected = new Set(inputs.map((i) => i.name));
  for (const name of given) {
    if (!expected.has(name)) throw invalid(`unknown input "${name}"; the model's inputs are: ${inputs.map(describeInput).join(', ')}`);
  }
  for (const info of inputs) {
    if (!given.includes(info.name)) throw invalid(`missing input ${describeInput(info)}`);
  }
}

/** `flatDims` describes `value`'s own nesting when it differs from the tensor's shape (v2 flat data). */
function toTensor(info: TensorInfo, value: unknown, dims: number[], flatDims = dims): PlainTensor {
  checkShape(info, dims);
  return { type: info.type, dims, data: fromNested(info.type, value, flatDims, `input ${info.name}`) };
}

export function checkShape(info: TensorInfo, dims: readonly number[]): void {
  const ok = dims.length === info.shape.length && info.shape.every((d, i) => typeof d !== 'number' || d < 0 || d === dims[i]);
  if (!ok) {
    throw invalid(`input ${info.name} has shape [${dims.join(', ')}] but the model expects [${info.shape.join(', ')}] (${info.type}; named dimensions may be any size)`);
  }
}

export function encodeJson(format: JsonFormat, outputs: Record<string, PlainTensor>, infos: readonly TensorInfo[], modelName: string, id?: string): string {
  const names = Object.keys(outputs);
  const value = (n: string) => jsonValue(outputs[n]!, infos.find((info) => info.name === n));
  switch (format) {
    case 'named':
      return JSON.stringify({ outputs: Object.fromEntries(names.map((n) => [n, value(n)])) });
    case 'v2':
      return JSON.stringify({
        model_name: modelName,
        ...(id === undefined ? {} : { id }),
        outputs: names.map((n) => v2Output(n, outputs[n]!, infos, true)),
      });
    case 'instances':
    case 'bare': {
      let body: unknown;
      if (names.length === 1) body = value(names[0]!);
      else if (format === 'bare') body = Object.fromEntries(names.map((n) => [n, value(n)]));
      else body = perRow(names, names.map(value));
      return JSON.stringify(format === 'bare' ? body : { predictions: body });
    }
  }
}

/**
 * One v2 output tensor, `data` left out when the caller sends it in binary. v2 carries tensors
 * only: a ZipMap output goes as its [rows, classes] tensor, its labels beside it.
 */
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

/** Nested arrays; a ZipMap output's rows as {class label: probability} objects. */
function jsonValue(t: PlainTensor, info: TensorInfo | undefined): unknown {
  return info?.classLabels ? probabilityRows(t, info.classLabels) : nest(jsonElements(t), t.dims);
}

/** TF-Serving style: one object per instance, each holding that row of every output. */
function perRow(names: string[], nested: unknown[]): unknown[] {
  const rows = Math.max(...nested.map((v) => (Array.isArray(v) ? v.length : 1)));
  return Array.from({ length: rows }, (_, r) => Object.fromEntries(names.map((n, i) => [n, Array.isArray(nested[i]) ? (nested[i] as unknown[])[r] : nested[i]])));
}
