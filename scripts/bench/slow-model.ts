/**
 * A model that is slow on its own compute, not on a handler's sleep: one request of a row of `n`
 * floats becomes the n×n outer product, multiplied by itself (n³ multiply-adds in onnxruntime, on
 * whatever thread the host gives it), summed to one number. The work depends on the input, so
 * onnxruntime cannot fold it away when the session is created; the file is a few hundred bytes.
 */
import { encodeModel, tensorInfo } from '../../test/fixtures/onnx-models';

export function slowMatmulModel(n: number): Uint8Array {
  return encodeModel({
    name: 'slow-matmul',
    nodes: [
      { opType: 'Transpose', name: 't', input: ['input'], output: ['column'] },
      { opType: 'MatMul', name: 'outer', input: ['column', 'input'], output: ['square'] },
      { opType: 'MatMul', name: 'cube', input: ['square', 'square'], output: ['product'] },
      { opType: 'ReduceSum', name: 'sum', input: ['product'], output: ['output'] },
    ],
    inputs: [tensorInfo('input', 'float32', [1, n])],
    outputs: [tensorInfo('output', 'float32', [1, 1])],
  });
}
