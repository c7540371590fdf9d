/**
 * The model bytes onnxruntime loads when a ZipMap output is served as its tensor: each such ZipMap
 * node becomes an Identity of the same input and output names, and its graph output becomes
 * tensor(float) [rows, classes]. Names, order and everything else stay as they are.
 *
 * The new file is spliced from the old one's bytes (protobuf allows re-emitting a message's fields
 * piecewise), so the weights are copied as bytes, never decoded; the two new messages are written
 * here field by field (no protobuf library to load for them).
 */
import { readFileSync } from 'node:fs';
import { NodeField, type OnnxFile } from './onnx-file';
import type { FieldSpan } from '../util/protobuf-wire';
import type { ZipMapOutput } from './served-outputs';

const kNodeField = 1;
const kOutputField = 12;
const kGraphField = 7;
const kVarint = 0;
const kLengthDelimited = 2;
/** ValueInfoProto.name / .type; TypeProto.tensor_type; Tensor.elem_type / .shape; TensorShapeProto.dim; Dimension.dim_value / .dim_param. */
// Field numbers of several messages, one member per field: equal numbers are expected.
/* eslint-disable @typescript-eslint/no-duplicate-enum-values */
const enum TypeFields {
  Name = 1,
  Type = 2,
  TensorType = 1,
  ElemType = 1,
  Shape = 2,
  Dim = 1,
  DimValue = 1,
  DimParam = 2,
}
/* eslint-enable @typescript-eslint/no-duplicate-enum-values */
const kFloat = 1;

export function zipMapsAsTensors(path: string, model: OnnxFile, zipMaps: ZipMapOutput[]): Buffer {
  const bytes = readFileSync(path);
  const replacements = new Map<FieldSpan, Buffer>();
  for (const z of zipMaps) {
    const node = model.nodes[z.node];
    const identity = [
      ...node.input.map((name) => text(NodeField.Input, name)),
      ...node.output.map((name) => text(NodeField.Output, name)),
      text(NodeField.Name, node.name),
      text(NodeField.OpType, 'Identity'),
      text(NodeField.Domain, ''),
    ];
    replacements.set(node.field, field(kNodeField, Buffer.concat(identity)));
    const out = model.outputs[z.output];
    const shape = Buffer.concat([
      field(TypeFields.Dim, text(TypeFields.DimParam, 'N')),
      field(TypeFields.Dim, number(TypeFields.DimValue, z.classLabels.length)),
    ]);
    const tensor = field(
      TypeFields.TensorType,
      Buffer.concat([number(TypeFields.ElemType, kFloat), field(TypeFields.Shape, shape)]),
    );
    replacements.set(
      out.field,
      field(kOutputField, Buffer.concat([text(TypeFields.Name, out.name), field(TypeFields.Type, tensor)])),
    );
  }
  const { graph } = model;
  const parts: Buffer[] = [];
  let pos = graph.payload;
  for (const [span, replacement] of [...replacements].sort((a, b) => a[0].start - b[0].start)) {
    parts.push(bytes.subarray(pos, span.start), replacement);
    pos = span.end;
  }
  parts.push(bytes.subarray(pos, graph.end));
  const newGraph = Buffer.concat(parts);
  return Buffer.concat([bytes.subarray(0, graph.start), field(kGraphField, newGraph), bytes.subarray(graph.end)]);
}

function text(fieldNumber: number, value: string): Buffer {
  return field(fieldNumber, Buffer.from(value, 'utf8'));
}

function number(fieldNumber: number, value: number): Buffer {
  return Buffer.concat([varint(fieldNumber * 8 + kVarint), varint(value)]);
}

/** A length-delimited field: tag, length, payload. */
function field(fieldNumber: number, payload: Uint8Array): Buffer {
  return Buffer.concat([varint(fieldNumber * 8 + kLengthDelimited), varint(payload.length), payload]);
}

function varint(value: number): Buffer {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Buffer.from(out);
}
