/**
 * The model bytes onnxruntime loads when a ZipMap output is served as its tensor: each such ZipMap
 * node becomes an Identity of the same input and output names, and its graph output becomes
 * tensor(float) [rows, classes]. Names, order and everything else stay as they are.
 *
 * The new file is spliced from the old one's bytes (protobuf allows re-emitting a message's fields
 * piecewise), so the weights are copied as bytes, never decoded.
 */
import { readFileSync } from 'node:fs';
import { onnxProto } from './onnx-detail';
import type { FieldSpan, OnnxFile } from './onnx-file';
import type { ZipMapOutput } from './served-outputs';

const kNodeField = 1;
const kOutputField = 12;
const kGraphField = 7;
const kLengthDelimited = 2;

export function zipMapsAsTensors(path: string, model: OnnxFile, zipMaps: ZipMapOutput[]): Buffer {
  const bytes = readFileSync(path);
  const onnx = onnxProto();
  const replacements = new Map<FieldSpan, Buffer>();
  for (const z of zipMaps) {
    const node = model.nodes[z.node]!;
    const identity = onnx.NodeProto.encode({ name: node.name, opType: 'Identity', domain: '', input: node.input, output: node.output }).finish();
    replacements.set(node.field, field(kNodeField, identity));
    const out = model.outputs[z.output]!;
    const tensor = onnx.ValueInfoProto.encode({
      name: out.name,
      type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT, shape: { dim: [{ dimParam: 'N' }, { dimValue: z.classLabels.length }] } } },
    }).finish();
    replacements.set(out.field, field(kOutputField, tensor));
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
