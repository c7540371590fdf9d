/**
 * Reads what serving needs from a model.onnx — metadata, opset imports, each node's name, operator
 * and value names, each graph input's and output's name and whether it is a tensor — straight from
 * the protobuf wire format, and skips the weights.
 *
 * By hand, not with onnx-proto: requiring onnx-proto costs a worker 11–24 ms, and serving needs only
 * these few fields. What a ZipMap output or a non-tensor value needs besides (class labels, a type's
 * notation) is read on demand from the spans recorded here (served-outputs.ts, onnx-types.ts).
 *
 * The file is untrusted input: every length is checked against its message before it is followed
 * (protobuf-file.ts), and the walk is a fixed set of nested loops (ModelProto → GraphProto →
 * NodeProto / ValueInfoProto → TypeProto), never a recursion whose depth the file chooses. Every
 * level is read through one small window on the file, so a node holding a large Constant costs no
 * more memory than its name, and the weights in `graph.initializer` are stepped over, never read.
 * Where a message repeats a singular field the last one wins (as onnx-proto decodes it), and a field
 * of an unexpected wire type is skipped (as onnxruntime's parser does).
 */
import type { ModelMetadata } from '../model-types';
import { Wire, type FieldSpan, type WireField } from '../util/protobuf-wire';
import { fields, span, withFile, type FileWindow } from './protobuf-file';

export interface GraphNode {
  name: string;
  opType: string;
  domain: string;
  input: string[];
  output: string[];
  /** Where the NodeProto sits in the file. */
  field: FieldSpan;
}

export interface GraphValue {
  name: string;
  /** Its type is a tensor (TypeProto.tensor_type); anything else (a sequence, a map, no type) is not. */
  tensor: boolean;
  /** Where the ValueInfoProto sits in the file. */
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
  ProducerName = 2,
  ProducerVersion = 3,
  Domain = 4,
  ModelVersion = 5,
  DocString = 6,
  Graph = 7,
  OpsetImport = 8,
  MetadataProps = 14,
}
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
  Domain = 7,
}
/** ValueInfoProto; OperatorSetIdProto and StringStringEntryProto number their two fields the same way. */
const enum PairField {
  First = 1,
  Second = 2,
}
const enum TypeField {
  TensorType = 1,
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
    switch (f.field) {
      case ModelField.ProducerName:
        model.producerName = file.text(f);
        break;
      case ModelField.ProducerVersion:
        model.producerVersion = file.text(f);
        break;
      case ModelField.Domain:
        model.domain = file.text(f);
        break;
      case ModelField.DocString:
        model.docString = file.text(f);
        break;
      case ModelField.OpsetImport: {
        const op = readPair(file, f);
        model.opsets.set(op.text === 'ai.onnx' ? '' : op.text, op.varint);
        break;
      }
      case ModelField.MetadataProps: {
        const entry = readPair(file, f);
        model.metadataProps[entry.text] = entry.second;
        break;
      }
      case ModelField.Graph:
        model.graph = { start: f.start, end: f.end, payload: f.payload };
        model.nodes = [];
        model.inputs = [];
        model.outputs = [];
        readGraph(file, f, model);
        break;
      default:
        break;
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

function readNode(file: FileWindow, field: WireField): GraphNode {
  const node: GraphNode = { name: '', opType: '', domain: '', input: [], output: [], field: span(field) };
  for (const f of fields(file, field.payload, field.end)) {
    if (f.wire !== Wire.Len) continue;
    switch (f.field) {
      case NodeField.Input:
        node.input.push(file.text(f));
        break;
      case NodeField.Output:
        node.output.push(file.text(f));
        break;
      case NodeField.Name:
        node.name = file.text(f);
        break;
      case NodeField.OpType:
        node.opType = file.text(f);
        break;
      case NodeField.Domain:
        node.domain = file.text(f);
        break;
      default:
        break;
    }
  }
  return node;
}

/** A ValueInfoProto: its name (field 1) and whether its last TypeProto (field 2) holds a tensor_type. */
function readValue(file: FileWindow, field: WireField): GraphValue {
  let name = '';
  let type: WireField | null = null;
  for (const f of fields(file, field.payload, field.end)) {
    if (f.wire !== Wire.Len) continue;
    if (f.field === PairField.First) name = file.text(f);
    else if (f.field === PairField.Second) type = f;
  }
  let tensor = false;
  if (type)
    for (const f of fields(file, type.payload, type.end))
      if (f.field === TypeField.TensorType && f.wire === Wire.Len) tensor = true;
  return { name, tensor, field: span(field) };
}

/** OperatorSetIdProto (domain, version) or StringStringEntryProto (key, value): field 1 text, field 2 a varint or text. */
function readPair(file: FileWindow, field: WireField): { text: string; varint: number; second: string } {
  const pair = { text: '', varint: 0, second: '' };
  for (const f of fields(file, field.payload, field.end)) {
    if (f.field === PairField.First && f.wire === Wire.Len) pair.text = file.text(f);
    else if (f.field === PairField.Second && f.wire === Wire.Varint) pair.varint = f.varint;
    else if (f.field === PairField.Second && f.wire === Wire.Len) pair.second = file.text(f);
  }
  return pair;
}
