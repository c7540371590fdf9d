/**
 * ONNX's own notation for a value's type, e.g. `seq(map(int64,tensor(float)))`, for describe and
 * errors. A TypeProto nests at most one TypeProto per level: the walk is a loop cut off at kMaxDepth.
 */
import { PairField, TypeField, type GraphValue, type OnnxFile } from './onnx-file';
import { Wire, type WireField } from '../util/protobuf-wire';
import { fields, lastField, lastVarint, withFile, type FileWindow } from './protobuf-file';

/** onnx.TensorProto.DataType, by number. */
const kElementNames = [
  'undefined',
  'float',
  'uint8',
  'int8',
  'uint16',
  'int16',
  'int32',
  'int64',
  'string',
  'bool',
  'float16',
  'double',
  'uint32',
  'uint64',
  'complex64',
  'complex128',
  'bfloat16',
];
/** Deeper types are shown cut short: no real model nests this far, and an error must stay short. */
const kMaxDepth = 8;

/** Tensor, SparseTensor, Sequence and Optional: elem_type; Map: key_type, then value_type (2). */
const kElemType = 1;
const kMapValueType = 2;

function elementName(elemType: number): string {
  return kElementNames[elemType] ?? `type${elemType}`;
}

export function valueTypeNotation(model: OnnxFile, value: GraphValue): string {
  return withFile(model.path, (file) => typeNotation(file, lastField(file, value.field, PairField.Second)));
}

/** Where a TypeProto holds several of its oneof's members, the first present of tensor, sparse tensor, sequence, map, optional counts. */
function typeNotation(file: FileWindow, type: WireField | null): string {
  let open = '';
  let close = '';
  let at = type;
  for (let depth = 0; at; depth++) {
    if (depth === kMaxDepth) return `${open}...${close}`;
    const members = new Map<number, WireField>();
    for (const f of fields(file, at.payload, at.end)) if (f.wire === Wire.Len) members.set(f.field, f);
    const tensor = members.get(TypeField.Tensor) ?? null;
    const sparse = members.get(TypeField.SparseTensor) ?? null;
    if (tensor || sparse)
      return `${open}${tensor ? 'tensor' : 'sparse_tensor'}(${elementName(lastVarint(file, (tensor ?? sparse)!, kElemType))})${close}`;
    const sequence = members.get(TypeField.Sequence);
    const map = members.get(TypeField.Map);
    const optional = members.get(TypeField.Optional);
    if (sequence) {
      open += 'seq(';
      at = lastField(file, sequence, kElemType);
    } else if (map) {
      open += `map(${elementName(lastVarint(file, map, kElemType))},`;
      at = lastField(file, map, kMapValueType);
    } else if (optional) {
      open += 'optional(';
      at = lastField(file, optional, kElemType);
    } else {
      break;
    }
    close = `)${close}`;
  }
  return `${open}unknown${close}`;
}
