/**
 * Which graph values the server can exchange, decided at load from the model file.
 *
 * onnxruntime-node binds tensors only: a sequence or map output fails every run ("Non tensor type
 * is temporarily not supported"). skl2onnx and onnxmltools end every classifier in a ZipMap whose
 * output is seq(map(label, float)); that one is served through the [rows, classes] tensor ZipMap
 * reads (graph-rewrite.ts turns the ZipMap into an Identity), and answered as one
 * {label: probability} object per row. Any other non-tensor input or output is refused here, at
 * load, with its name and type, rather than failing at every invoke.
 */
import type Long from 'long';
import type { onnx } from 'onnx-proto';
import { MmeError } from '../errors';
import type { TensorInfo } from '../protocol/frames';
import { decodeNode, decodeValue } from './onnx-detail';
import type { GraphValue, OnnxFile } from './onnx-file';
import { typeNotation } from './onnx-types';

export interface ZipMapOutput {
  /** Index in the graph's outputs. */
  output: number;
  /** Index of the ZipMap node in the graph's nodes. */
  node: number;
  /** Class labels in column order, JSON-safe (int64 beyond 2^53 as decimal strings). */
  classLabels: Array<number | string>;
  /** The output's ONNX type, e.g. seq(map(int64,tensor(float))). */
  type: string;
}

export function zipMapOutputs(model: OnnxFile): ZipMapOutput[] {
  refuseNonTensorInputs(model);
  const producers = new Map<string, number>();
  model.nodes.forEach((node, i) => node.output.forEach((name) => producers.set(name, i)));
  const served: ZipMapOutput[] = [];
  model.outputs.forEach((out, i) => {
    if (out.tensor) return;
    const nodeIndex = producers.get(out.name);
    const node = nodeIndex === undefined ? undefined : model.nodes[nodeIndex];
    if (!node || node.opType !== 'ZipMap' || node.domain !== 'ai.onnx.ml') {
      throw new MmeError('MME_ERR_INVALID_MODEL', `output ${out.name} is a ${notation(model, out)}${node ? ` made by ${node.opType}` : ''}; onnxruntime-node returns tensors only, so this server serves a non-tensor output only when it comes from a ZipMap. Export the model with tensor outputs (skl2onnx: options={id(model): {'zipmap': False}}) or drop this output from the graph`);
    }
    served.push({ output: i, node: nodeIndex!, classLabels: zipMapLabels(decodeNode(model, node)), type: notation(model, out) });
  });
  return served;
}

function refuseNonTensorInputs(model: OnnxFile): void {
  const bad = model.inputs.find((input) => !input.tensor);
  if (bad) {
    throw new MmeError('MME_ERR_INVALID_MODEL', `input ${bad.name} is a ${notation(model, bad)}; onnxruntime-node can feed tensors only. Convert the model with tensor inputs (skl2onnx: initial_types=[('input', FloatTensorType([None, n]))] instead of a DictVectorizer's map input)`);
  }
}

/** A non-tensor value's type, which only onnx-proto's whole decode spells out. */
function notation(model: OnnxFile, value: GraphValue): string {
  return typeNotation(decodeValue(model, value).type);
}

function zipMapLabels(node: onnx.INodeProto): Array<number | string> {
  const attr = (name: string) => node.attribute?.find((a) => a.name === name);
  const ints = attr('classlabels_int64s')?.ints;
  if (ints?.length) return ints.map(exactInteger);
  const strings = attr('classlabels_strings')?.strings;
  if (strings?.length) return strings.map((s) => Buffer.from(s).toString('utf8'));
  throw new MmeError('MME_ERR_INVALID_MODEL', `ZipMap node ${node.name || node.output?.[0]} has neither classlabels_int64s nor classlabels_strings`);
}

function exactInteger(value: number | Long): number | string {
  if (typeof value === 'number') return value;
  return Number.isSafeInteger(value.toNumber()) ? value.toNumber() : value.toString();
}

/**
 * The outputs as describe and handlers see them: the session's own metadata, except that a ZipMap
 * output keeps its real ONNX type and lists its class labels beside the tensor the session returns.
 */
export function describeOutputs(sessionOutputs: TensorInfo[], model: OnnxFile, zipMaps: ZipMapOutput[]): TensorInfo[] {
  return sessionOutputs.map((info) => {
    const z = zipMaps.find((zm) => model.outputs[zm.output]!.name === info.name);
    if (!z) return info;
    return { name: info.name, type: z.type, shape: [], classLabels: z.classLabels, tensor: { type: info.type, shape: info.shape } };
  });
}
