/**
 * What describes a model to both processes: its tensors and metadata (read from the model file by the
 * worker process, shown by describe and the OIP metadata routes) and the head of an answer its handler
 * gives. Frames carry them (Loaded, Chunk), but they are the model's, not the wire's.
 */
export interface TensorInfo {
  name: string;
  type: string;
  /** Symbolic dimensions are strings (e.g. "batch"), fixed ones numbers. */
  shape: Array<number | string>;
  /**
   * A ZipMap output (`type` is then its ONNX type, e.g. seq(map(int64,tensor(float)))): its class
   * labels in column order (int64 labels beyond 2^53 as decimal strings), and the tensor the
   * session returns in its place, [rows, classes].
   */
  classLabels?: Array<number | string>;
  tensor?: { type: string; shape: Array<number | string> };
}

/** What the model file says about itself, shown by describe. */
export interface ModelMetadata {
  irVersion: number;
  producerName: string;
  producerVersion: string;
  domain: string;
  modelVersion: number;
  docString: string;
  /** Imported opsets by domain ("ai.onnx" for the default domain). */
  opsets: Record<string, number>;
  /** The model's custom metadata_props. */
  metadataProps: Record<string, string>;
}

/** What goes on the wire before a streamed response's first chunk, and cannot change after it. */
export interface ResponseHead {
  status: number;
  contentType: string;
  headers: Record<string, string>;
}
