/**
 * Whole ONNX messages, decoded by onnx-proto, for the few models that need more than onnx-file.ts
 * reads: a ZipMap's class labels and its rewrite, a non-tensor value's type named in an error, the
 * opset probes behind a load failure's explanation. onnx-proto is required on first use, so a
 * worker whose models need none of this never pays for it (11–24 ms).
 */
import type * as OnnxProto from 'onnx-proto';
import { readSpan, type GraphNode, type GraphValue, type OnnxFile } from './onnx-file';

export type Onnx = typeof OnnxProto.onnx;

export function onnxProto(): Onnx {
  return (require('onnx-proto') as typeof OnnxProto).onnx;
}

export function decodeNode(model: OnnxFile, node: GraphNode): OnnxProto.onnx.NodeProto {
  return onnxProto().NodeProto.decode(readSpan(model.path, node.field));
}

export function decodeValue(model: OnnxFile, value: GraphValue): OnnxProto.onnx.ValueInfoProto {
  return onnxProto().ValueInfoProto.decode(readSpan(model.path, value.field));
}
