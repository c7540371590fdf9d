/**
 * ONNX value types as text: onnxruntime's tensor type names for tensors (float32, int64, ...) and
 * ONNX's own notation for everything else — `seq(map(int64,tensor(float)))`, as onnxruntime's
 * Python API prints a ZipMap output — so describe shows what a model really produces.
 */
import { onnx } from 'onnx-proto';

const DataType = onnx.TensorProto.DataType;

/** ONNX element type → onnxruntime-node's tensor type name. */
const kOrtNames: Record<number, string> = {
  [DataType.FLOAT]: 'float32', [DataType.DOUBLE]: 'float64', [DataType.FLOAT16]: 'float16',
  [DataType.INT8]: 'int8', [DataType.INT16]: 'int16', [DataType.INT32]: 'int32', [DataType.INT64]: 'int64',
  [DataType.UINT8]: 'uint8', [DataType.UINT16]: 'uint16', [DataType.UINT32]: 'uint32', [DataType.UINT64]: 'uint64',
  [DataType.BOOL]: 'bool', [DataType.STRING]: 'string',
};

/** ONNX element type → its name in ONNX's type notation (tensor(float), map(int64, ...)). */
function onnxElementName(elemType: number): string {
  const name = DataType[elemType] as string | undefined;
  return name ? name.toLowerCase() : `type${elemType}`;
}

export function ortTensorType(elemType: number): string {
  return kOrtNames[elemType] ?? onnxElementName(elemType);
}

export function isTensor(type: onnx.ITypeProto | null | undefined): boolean {
  return !!type?.tensorType;
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
