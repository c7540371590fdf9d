/**
 * Reads what serving needs from a model.onnx (metadata, opsets, nodes, graph inputs and outputs)
 * straight from the protobuf wire format: requiring onnx-proto costs a worker 11–24 ms. Anything
 * else is read on demand from the spans recorded here (served-outputs.ts, onnx-types.ts).
 *
 * The file is untrusted: every length is checked before it is followed, the walk is a fixed set of
 * nested loops, never a recursion whose depth the file chooses, and it reads through one small
 * window, so the weights are stepped over, never read. A repeated singular field: the last wins
 * (as onnx-proto decodes it); a field of an unexpected wire type is skipped (as onnxruntime does).
 */
import type { ModelMetadata } from '../model-types';
import { Wire, type FieldSpan, type WireField } from '../util/protobuf-wire';
import { fields, lastField, lastText, lastVarint, withFile, type FileWindow } from './protobuf-file';

export interface GraphNode {
  name: string;
  opType: string;
  domain: string;
  input: string[];
  output: string[];
  /** The NodeProto in the file. */
  field: FieldSpan;
}

export interface GraphValue {
  name: string;
  /** Its type is a tensor (TypeProto.tensor_type); anything else (a sequence, a map, no type) is not. */
  tensor: boolean;
  field: FieldSpan;
}

/** The model's own fields, as describe shows them, but opsets keyed by the domain as the file spells it. */
export interface OnnxFile extends Omit<ModelMetadata, 'opsets'> {
  path: string;
  /** Domain ('' is ai.onnx) → imported version. */
  opsets: Map<string, number>;
  nodes: GraphNode[];
  inputs: GraphValue[];
  outputs: GraphValue[];
  /** The ModelProto.graph field, for splicing a rewritten graph (graph-rewrite.ts). */
  graph: FieldSpan;
}

const enum ModelField {
  IrVersion = 1,
  ModelVersion = 5,
  Graph = 7,
  OpsetImport = 8,
  MetadataProps = 14,
}
/** ModelProto's text fields, by number. */
const kModelText = new Map<number, 'producerName' | 'producerVersion' | 'domain' | 'docString'>([
  [2, 'producerName'],
  [3, 'producerVersion'],
  [4, 'domain'],
  [6, 'docString'],
]);
const enum GraphField {
  Node = 1,
  Input = 11,
  Output = 12,
}
/** NodeProto's fields: read here, written by graph-rewrite.ts. */
export const enum NodeField {
  Input = 1,
  Output = 2,
  Name = 3,
  OpType = 4,
  Attribute = 5,
  Domain = 7,
}
/** ValueInfoProto; OperatorSetIdProto and StringStringEntryProto number their two fields the same way. */
export const enum PairField {
  First = 1,
  Second = 2,
}
export const enum TypeField {
  Tensor = 1,
  Sequence = 4,
  Map = 5,
  SparseTensor = 8,
  Optional = 9,
}

/** Reads `path`; throws a plain Error naming the offset when the file is not a protobuf ModelProto. */
export function readOnnxFile(path: string): OnnxFile {
  return withFile(path, (file) => readModel(file, path));
}

function readModel(file: FileWindow, path: string): OnnxFile {
  const model: OnnxFile = {
    path,
    irVersion: 0,
    producerName: '',
    producerVersion: '',
    domain: '',
    modelVersion: 0,
    docString: '',
    // Keys are the file's text: no prototype for a metadata key named __proto__ to reach.
    opsets: new Map(),
    metadataProps: Object.create(null) as Record<string, string>,
    nodes: [],
    inputs: [],
    outputs: [],
    graph: { start: 0, end: 0, payload: 0 },
  };
  for (const f of fields(file, 0, file.size)) {
    if (f.wire === Wire.Varint) {
      if (f.field === ModelField.IrVersion) model.irVersion = f.varint;
      else if (f.field === ModelField.ModelVersion) model.modelVersion = f.varint;
      continue;
    }
    if (f.wire !== Wire.Len) continue;
    const text = kModelText.get(f.field);
    if (text) model[text] = file.text(f);
    else if (f.field === ModelField.OpsetImport) {
      const op = readPair(file, f);
      model.opsets.set(op.text === 'ai.onnx' ? '' : op.text, op.varint);
    } else if (f.field === ModelField.MetadataProps) {
      const entry = readPair(file, f);
      model.metadataProps[entry.text] = entry.second;
    } else if (f.field === ModelField.Graph) {
      Object.assign(model, { graph: f, nodes: [], inputs: [], outputs: [] });
      readGraph(file, f, model);
    }
  }
  return model;
}

function readGraph(file: FileWindow, graph: WireField, model: OnnxFile): void {
  for (const f of fields(file, graph.payload, graph.end)) {
    if (f.wire !== Wire.Len) continue;
    if (f.field === GraphField.Node) model.nodes.push(readNode(file, f));
    else if (f.field === GraphField.Input) model.inputs.push(readValue(file, f));
    else if (f.field === GraphField.Output) model.outputs.push(readValue(file, f));
  }
}

const kNodeText = new Map<number, 'name' | 'opType' | 'domain'>([
  [NodeField.Name, 'name'],
  [NodeField.OpType, 'opType'],
  [NodeField.Domain, 'domain'],
]);

function readNode(file: FileWindow, field: WireField): GraphNode {
  const node: GraphNode = { name: '', opType: '', domain: '', input: [], output: [], field };
  for (const f of fields(file, field.payload, field.end)) {
    if (f.wire !== Wire.Len) continue;
    const text = kNodeText.get(f.field);
    if (text) node[text] = file.text(f);
    else if (f.field === NodeField.Input) node.input.push(file.text(f));
    else if (f.field === NodeField.Output) node.output.push(file.text(f));
  }
  return node;
}

/** A ValueInfoProto: its name (field 1) and whether its last TypeProto (field 2) holds a tensor_type. */
function readValue(file: FileWindow, field: WireField): GraphValue {
  const type = lastField(file, field, PairField.Second);
  const tensor = type !== null && lastField(file, type, TypeField.Tensor) !== null;
  return { name: lastText(file, field, PairField.First), tensor, field };
}

/** OperatorSetIdProto (domain, version) or StringStringEntryProto (key, value): field 1 text, field 2 a varint or text. */
function readPair(file: FileWindow, field: WireField): { text: string; varint: number; second: string } {
  const second = lastText(file, field, PairField.Second);
  return { text: lastText(file, field, PairField.First), varint: lastVarint(file, field, PairField.Second), second };
}
