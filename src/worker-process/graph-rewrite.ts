/**
 * ONNX bytes written here field by field (no protobuf library to load for them): the model
 * onnxruntime loads when a ZipMap output is served as its tensor, and the Identity model that warms
 * up the runtime and probes its opsets.
 *
 * A served ZipMap node becomes an Identity of the same input and output names, and its graph output
 * tensor(float) [rows, classes]; names, order and everything else stay. The new file is spliced from
 * the old one's bytes (protobuf allows re-emitting a message's fields piecewise), so the weights are
 * copied as bytes, never decoded.
 */
import { readFileSync } from 'node:fs';
import { NodeField, type OnnxFile } from './onnx-file';
import { Wire, type FieldSpan } from '../util/protobuf-wire';
import type { ZipMapOutput } from './served-outputs';

const kNodeField = 1;
const kOutputField = 12;
const kGraphField = 7;
const kFloat = 1;
const kIrVersion = 8;

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
    // ValueInfoProto {1 name, 2 type: TypeProto {1 tensor_type: {1 elem_type, 2 shape: TensorShapeProto
    // {1 dim: Dimension {1 dim_value, 2 dim_param}}}}}
    const shape = Buffer.concat([field(1, text(2, 'N')), field(1, number(1, z.classLabels.length))]);
    const tensor = field(1, Buffer.concat([number(1, kFloat), field(2, shape)]));
    replacements.set(out.field, field(kOutputField, Buffer.concat([text(1, out.name), field(2, tensor)])));
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

/** y = Identity(x), float tensors of any shape, importing each [domain, version] of `opsets`. */
export function identityModel(opsets: ReadonlyArray<readonly [string, number]>): Buffer {
  const value = (n: number, name: string) =>
    field(n, Buffer.concat([text(1, name), field(2, field(1, number(1, kFloat)))]));
  const node = [text(NodeField.Input, 'x'), text(NodeField.Output, 'y'), text(NodeField.OpType, 'Identity')];
  const graph = [field(kNodeField, Buffer.concat(node)), text(2, 'identity'), value(11, 'x'), value(kOutputField, 'y')];
  const imports = opsets.map(([domain, version]) => field(8, Buffer.concat([text(1, domain), number(2, version)])));
  return Buffer.concat([number(1, kIrVersion), field(kGraphField, Buffer.concat(graph)), ...imports]);
}

function text(fieldNumber: number, value: string): Buffer {
  return field(fieldNumber, Buffer.from(value, 'utf8'));
}

function number(fieldNumber: number, value: number): Buffer {
  return Buffer.concat([varint(fieldNumber * 8 + Wire.Varint), varint(value)]);
}

/** A length-delimited field: tag, length, payload. */
function field(fieldNumber: number, payload: Uint8Array): Buffer {
  return Buffer.concat([varint(fieldNumber * 8 + Wire.Len), varint(payload.length), payload]);
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
