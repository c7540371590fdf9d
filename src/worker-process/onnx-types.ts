/**
 * ONNX's own notation for a value's type — `seq(map(int64,tensor(float)))`, as onnxruntime's Python
 * API prints a ZipMap output — so describe and errors show what a model really takes or produces.
 */
import type { onnx } from 'onnx-proto';
import { onnxProto } from './onnx-detail';

/** ONNX element type → its name in ONNX's type notation (tensor(float), map(int64, ...)). */
function onnxElementName(elemType: number): string {
  const name = onnxProto().TensorProto.DataType[elemType] as string | undefined;
  return name ? name.toLowerCase() : `type${elemType}`;
}

/** `tensor(float)`, `seq(map(string,tensor(float)))`, `optional(tensor(int64))`, ... */
export function typeNotation(type: onnx.ITypeProto | null | undefined): string {
  if (!type) return 'unknown';
  if (type.tensorType) return `tensor(${onnxElementName(type.tensorType.elemType ?? 0)})`;
  if (type.sparseTensorType) return `sparse_tensor(${onnxElementName(type.sparseTensorType.elemType ?? 0)})`;
  if (type.sequenceType) return `seq(${typeNotation(type.sequenceType.elemType)})`;
  if (type.mapType) return `map(${onnxElementName(type.mapType.keyType ?? 0)},${typeNotation(type.mapType.valueType)})`;
  if (type.optionalType) return `optional(${typeNotation(type.optionalType.elemType)})`;
  return 'unknown';
}
