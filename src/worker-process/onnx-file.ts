/**
 * Reads what serving needs from a model.onnx — metadata, opset imports, nodes, graph inputs and
 * outputs — with onnx-proto's protobuf decoders, and skips the weights.
 *
 * The top two levels (ModelProto, GraphProto) are walked by position in the file rather than
 * decoded whole: a model of up to 2 GB keeps its weights in `graph.initializer`, and decoding
 * those into the worker's heap next to onnxruntime's own copy would double its memory at load.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { onnx } from 'onnx-proto';
import type { ModelMetadata } from '../protocol/frames';

/** The model's own fields, as describe shows them, but opsets keyed by the domain as the file spells it. */
export interface OnnxFile extends Omit<ModelMetadata, 'opsets'> {
  /** Domain ('' is ai.onnx) → imported version. */
  opsets: Map<string, number>;
  nodes: onnx.NodeProto[];
  inputs: onnx.ValueInfoProto[];
  outputs: onnx.ValueInfoProto[];
  /** Where each graph field sits in the file, for splicing a rewritten graph (graph-rewrite.ts). */
  layout: GraphLayout;
}

/** A field's bytes, tag and length prefix included: [start, end). */
export interface FieldSpan {
  start: number;
  end: number;
}

export interface GraphLayout {
  /** The ModelProto.graph field; its payload (the GraphProto) starts at `payload`. */
  graph: FieldSpan & { payload: number };
  /** GraphProto.node fields, in file order (parallel to OnnxFile.nodes). */
  nodes: FieldSpan[];
  /** GraphProto.output fields (parallel to OnnxFile.outputs). */
  outputs: FieldSpan[];
}

const enum ModelField { IrVersion = 1, ProducerName = 2, ProducerVersion = 3, Domain = 4, ModelVersion = 5, DocString = 6, Graph = 7, OpsetImport = 8, MetadataProps = 14 }
const enum GraphField { Node = 1, Input = 11, Output = 12 }
const enum WireType { Varint = 0, Fixed64 = 1, Bytes = 2, Fixed32 = 5 }

/** Reads `path`; throws a plain Error naming the offset when the file is not a protobuf ModelProto. */
export function readOnnxFile(path: string): OnnxFile {
  const file = new FileWindow(path);
  try {
    return readModel(file);
  } finally {
    file.close();
  }
}

function readModel(file: FileWindow): OnnxFile {
  const model: OnnxFile = {
    irVersion: 0, producerName: '', producerVersion: '', domain: '', modelVersion: 0, docString: '',
    opsets: new Map(), metadataProps: {}, nodes: [], inputs: [], outputs: [],
    layout: { graph: { start: 0, end: 0, payload: 0 }, nodes: [], outputs: [] },
  };
  for (const f of fields(file, 0, file.size)) {
    switch (f.field) {
      case ModelField.IrVersion: model.irVersion = f.varint; break;
      case ModelField.ModelVersion: model.modelVersion = f.varint; break;
      case ModelField.ProducerName: model.producerName = file.text(f); break;
      case ModelField.ProducerVersion: model.producerVersion = file.text(f); break;
      case ModelField.Domain: model.domain = file.text(f); break;
      case ModelField.DocString: model.docString = file.text(f); break;
      case ModelField.OpsetImport: {
        const op = onnx.OperatorSetIdProto.decode(file.bytes(f));
        model.opsets.set(op.domain === 'ai.onnx' ? '' : op.domain, Number(op.version));
        break;
      }
      case ModelField.MetadataProps: {
        const entry = onnx.StringStringEntryProto.decode(file.bytes(f));
        model.metadataProps[entry.key] = entry.value;
        break;
      }
      case ModelField.Graph:
        model.layout.graph = { start: f.start, end: f.end, payload: f.payload };
        readGraph(file, f, model);
        break;
      default:
        break;
    }
  }
  return model;
}

function readGraph(file: FileWindow, graph: Field, model: OnnxFile): void {
  for (const f of fields(file, graph.payload, graph.end)) {
    if (f.field === GraphField.Node) {
      model.nodes.push(onnx.NodeProto.decode(file.bytes(f)));
      model.layout.nodes.push({ start: f.start, end: f.end });
    } else if (f.field === GraphField.Input) {
      model.inputs.push(onnx.ValueInfoProto.decode(file.bytes(f)));
    } else if (f.field === GraphField.Output) {
      model.outputs.push(onnx.ValueInfoProto.decode(file.bytes(f)));
      model.layout.outputs.push({ start: f.start, end: f.end });
    }
  }
}

interface Field extends FieldSpan {
  field: number;
  /** Offset of a length-delimited field's payload. */
  payload: number;
  varint: number;
}

function* fields(file: FileWindow, from: number, to: number): Generator<Field> {
  let pos = from;
  while (pos < to) {
    const start = pos;
    const [tag, afterTag] = file.varint(pos);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    let varint = 0;
    let payload = afterTag;
    switch (wire) {
      case WireType.Varint: [varint, pos] = file.varint(afterTag); break;
      case WireType.Fixed64: pos = afterTag + 8; break;
      case WireType.Fixed32: pos = afterTag + 4; break;
      case WireType.Bytes: {
        const [length, afterLength] = file.varint(afterTag);
        payload = afterLength;
        pos = afterLength + length;
        break;
      }
      default:
        throw new Error(`not an ONNX model: unexpected protobuf wire type ${wire} at byte ${start}`);
    }
    if (field === 0 || pos > to) throw new Error(`not an ONNX model: a protobuf field at byte ${start} runs past its message`);
    yield { field, start, end: pos, payload, varint };
  }
}

const kWindowBytes = 1 << 16;

/** Positional reads through a small window, so walking many small fields costs few syscalls. */
class FileWindow {
  readonly size: number;
  readonly #fd: number;
  #window = Buffer.alloc(kWindowBytes);
  #windowStart = 0;
  #windowEnd = 0;

  constructor(path: string) {
    this.#fd = openSync(path, 'r');
    this.size = fstatSync(this.#fd).size;
  }

  close(): void {
    closeSync(this.#fd);
  }

  /** A varint at `pos` and the offset after it. Values past 2^53 lose precision; sizes never get there. */
  varint(pos: number): [number, number] {
    const bytes = this.#slice(pos, Math.min(10, this.size - pos));
    let value = 0;
    for (let i = 0; i < bytes.length; i++) {
      value += (bytes[i]! & 0x7f) * 2 ** (7 * i);
      if (bytes[i]! < 0x80) return [value, pos + i + 1];
    }
    throw new Error(`not an ONNX model: bad protobuf varint at byte ${pos}`);
  }

  /** A length-delimited field's payload, as its own buffer (decoders may keep references into it). */
  bytes(f: Field): Buffer {
    return Buffer.from(this.#slice(f.payload, f.end - f.payload));
  }

  text(f: Field): string {
    return this.#slice(f.payload, f.end - f.payload).toString('utf8');
  }

  #slice(pos: number, length: number): Buffer {
    if (pos >= this.#windowStart && pos + length <= this.#windowEnd) {
      return this.#window.subarray(pos - this.#windowStart, pos - this.#windowStart + length);
    }
    if (length > kWindowBytes) {
      const big = Buffer.alloc(length);
      readSync(this.#fd, big, 0, length, pos);
      return big;
    }
    const n = readSync(this.#fd, this.#window, 0, kWindowBytes, pos);
    this.#windowStart = pos;
    this.#windowEnd = pos + n;
    if (n < length) throw new Error(`not an ONNX model: the file ends inside a protobuf field at byte ${pos}`);
    return this.#window.subarray(0, length);
  }
}
