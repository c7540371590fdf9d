/**
 * Which graph values the server can exchange, decided at load. onnxruntime-node binds tensors only;
 * skl2onnx and onnxmltools end every classifier in a ZipMap (seq(map(label, float))), served as the
 * [rows, classes] tensor it reads (graph-rewrite.ts). Any other non-tensor value is refused at load,
 * rather than failing at every invoke.
 */
import { invalidModel, quote } from '../errors';
import type { TensorInfo } from '../model-types';
import { NodeField, type GraphNode, type OnnxFile } from './onnx-file';
import { valueTypeNotation } from './onnx-types';
import { Wire } from '../util/protobuf-wire';
import { fields, withFile, type FileWindow } from './protobuf-file';

const enum AttributeField {
  Name = 1,
  Ints = 8,
  Strings = 9,
}

export interface ZipMapOutput {
  /** Indexes in the graph's outputs and nodes. */
  output: number;
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
      throw invalidModel(
        `output ${quote(out.name)} is a ${valueTypeNotation(model, out)}${node ? ` made by ${quote(node.opType)}` : ''}; onnxruntime-node returns tensors only, so this server serves a non-tensor output only when it comes from a ZipMap. Export the model with tensor outputs (skl2onnx: options={id(model): {'zipmap': False}}) or drop this output from the graph`,
      );
    }
    served.push({
      output: i,
      node: nodeIndex!,
      classLabels: withFile(model.path, (file) => zipMapLabels(file, node)),
      type: valueTypeNotation(model, out),
    });
  });
  return served;
}

function refuseNonTensorInputs(model: OnnxFile): void {
  const bad = model.inputs.find((input) => !input.tensor);
  if (bad) {
    throw invalidModel(
      `input ${quote(bad.name)} is a ${valueTypeNotation(model, bad)}; onnxruntime-node can feed tensors only. Convert the model with tensor inputs (skl2onnx: initial_types=[('input', FloatTensorType([None, n]))] instead of a DictVectorizer's map input)`,
    );
  }
}

/** The first classlabels_int64s attribute's labels if any, else classlabels_strings' (int64s exactly, packed or not). */
function zipMapLabels(file: FileWindow, node: GraphNode): Array<number | string> {
  const found = new Map<string, Array<number | string>>();
  for (const a of fields(file, node.field.payload, node.field.end)) {
    if (a.field !== NodeField.Attribute || a.wire !== Wire.Len) continue;
    let name = '';
    const ints: Array<number | string> = [];
    const strings: string[] = [];
    for (const f of fields(file, a.payload, a.end)) {
      if (f.field === AttributeField.Name && f.wire === Wire.Len) name = file.text(f);
      // One varint (its bytes are the field's payload), or a packed run of them.
      else if (f.field === AttributeField.Ints && (f.wire === Wire.Varint || f.wire === Wire.Len))
        readInt64s(file.bytes(f), ints);
      else if (f.field === AttributeField.Strings && f.wire === Wire.Len) strings.push(file.text(f));
    }
    if (!found.has(name)) found.set(name, name === 'classlabels_int64s' ? ints : strings);
  }
  const labels = [found.get('classlabels_int64s'), found.get('classlabels_strings')].find((l) => l && l.length > 0);
  if (labels) return labels;
  throw invalidModel(
    `ZipMap node ${quote(node.name || node.output[0] || '')} has neither classlabels_int64s nor classlabels_strings`,
  );
}

/** Appends each int64 varint of `bytes` to `out`: a safe integer as a number, any other as its decimal string. */
function readInt64s(bytes: Buffer, out: Array<number | string>): void {
  let value = 0n;
  let shift = 0n;
  for (let i = 0; i < bytes.length; i++) {
    value |= BigInt(bytes[i] & 0x7f) << shift;
    shift += 7n;
    if (bytes[i] >= 0x80) continue;
    const exact = BigInt.asIntN(64, value);
    out.push(Number.isSafeInteger(Number(exact)) ? Number(exact) : exact.toString());
    value = 0n;
    shift = 0n;
  }
  if (shift !== 0n) throw invalidModel('a ZipMap class label is not a whole protobuf varint');
}

/** The session's outputs, but a ZipMap's with its real ONNX type and its class labels beside the tensor. */
export function describeOutputs(sessionOutputs: TensorInfo[], model: OnnxFile, zipMaps: ZipMapOutput[]): TensorInfo[] {
  return sessionOutputs.map((info) => {
    const z = zipMaps.find((zm) => model.outputs[zm.output].name === info.name);
    if (!z) return info;
    return {
      name: info.name,
      type: z.type,
      shape: [],
      classLabels: z.classLabels,
      tensor: { type: info.type, shape: info.shape },
    };
  });
}
